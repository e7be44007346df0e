/// The locks of a ``ClaimSession`` (``ClaimSession/locks``) on a store on which
/// several processes claim at the same time (PostgreSQL), in place of one claim at
/// a time on the whole store.
///
/// A claim takes the destinations it plans for, each until its session commits,
/// and leaves those another open session holds: workers claim disjoint
/// destinations and never wait for each other. What keeps a destination's messages
/// in FIFO order with one in flight is then the reservation: a session reads the
/// records in flight to a destination again once it holds it, so it sees every
/// claim committed by a session that held it before.
///
/// ## Implementation requirements
/// 1. **Disjoint.** A key granted to a session is granted to no other session until
///    that one ends (commits or rolls back). A store may hold more than the keys
///    asked for (a hash shared by two keys): that only makes other sessions skip
///    more.
/// 2. **Fresh after the grant.** ``Reservation/inFlight`` and every read the session
///    makes after ``reserve(_:wait:keysAreRecipients:)`` returns see what sessions
///    that held the granted keys committed before.
/// 3. **Never waiting unless asked.** With `wait: false` a key another session holds
///    is answered as busy at once. With `wait: true` every key is granted, waiting
///    for its holder; a session waits only for keys in one call, before it asks for
///    any without waiting, in an order that is the same for every session (no two
///    sessions can then wait for each other).
/// 4. **Bounded.** A store may grant fewer keys than asked for without them being
///    busy (it holds as many as it can keep): those are in neither
///    ``Reservation/granted`` nor ``Reservation/busy``, and the claim stops before
///    their first record. Keys asked for with `wait: true` are always granted.
/// 5. **Claims of no destination.** A claim that holds destinations says so before
///    it reads a candidate, by a call with no keys if it has none to hold yet. A
///    session that reads candidates without having said so (recover, redrive,
///    receipts: claims that take records, not destinations) waits for every other
///    such session, as one claim at a time on the whole store.
public protocol DestinationLocks: AnyObject {
    /// Takes `keys` (in the order a claim met them) for this session until it ends.
    /// - Parameters:
    ///   - wait: wait for a key another session holds instead of answering it busy.
    ///   - keysAreRecipients: the keys are recipients, so the records in flight read
    ///     again are those to the granted keys; otherwise every record in flight.
    /// - Throws: `storeIO`, `corrupt`.
    func reserve(_ keys: [String], wait: Bool, keysAreRecipients: Bool) throws(MsgError) -> Reservation
}

/// What ``DestinationLocks/reserve(_:wait:keysAreRecipients:)`` took.
public struct Reservation: Sendable, Equatable {
    /// The keys this session now holds.
    public var granted: Set<String>
    /// The keys another session holds.
    public var busy: Set<String>
    /// The records in flight, read after the keys were granted: to the granted keys
    /// when they are recipients, else all of them.
    public var inFlight: [InFlight]

    public init(granted: Set<String>, busy: Set<String>, inFlight: [InFlight]) {
        self.granted = granted
        self.busy = busy
        self.inFlight = inFlight
    }
}
