/// How a command will use a store; a store's factory opens it accordingly.
///
/// A command that only looks (`queue ls`, `count`, `show`, `stats`, `export`) opens
/// with ``read``: a store that does not exist is an error, not a new empty queue
/// made at a mistyped path, and a damaged one is reported and left where it is.
public enum StoreAccess: Sendable, Equatable {
    /// Open an existing store only: never create, migrate, repair or move a file.
    case read
    /// Create the store when it is missing, migrate it, and set a damaged file aside.
    case write
}
