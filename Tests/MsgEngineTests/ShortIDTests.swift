import MsgEngine
import MsgKit
import Testing

/// Short ids (#31): a table shows as many last characters as make every id of
/// the store unique (at least 8), and any unique part of an id, from its start or
/// its end, names it.
@Suite struct ShortIDTests {
    func store(_ ids: [String]) throws -> any Store {
        let store = try PluginLoader().openStore("json:\(temporaryDirectory())/q.json")
        _ = try store.add(ids.enumerated().map { (i, id) in
            EncodedMessage(Message(id: id, to: i == 0 ? "bob.smith@example.com" : "山田@example.jp", body: "b", now: Timestamp(milliseconds: Int64(i))))
        })
        return store
    }

    @Test func theLengthIsTheLongestSharedEndingPlusOne() throws {
        let apart = ["01a21368-6717-76ba-bc70-841a3d94bc02", "01a21368-672d-7013-a1ec-110c3428bd2a"]
        #expect(try ShortID.measure(store(apart)).idLength == 8, "at least 8")
        // The last 9 characters shared: 10 tell them apart.
        let close = ["01a21368-6717-76ba-bc70-84aa3d94bc02", "01a21368-672d-7013-a1ec-11ba3d94bc02"]
        let measured = try ShortID.measure(store(close))
        #expect(measured.idLength == 10)
        #expect(measured.recipientWidth == 21, "the widest recipient in cells (山田 takes four)")
        #expect(ShortID.of(close[0], length: 10) == "aa3d94bc02")
        // Past the last group the dash counts: 13 digits shared, 14 shown, 15 characters.
        let across = ["01a21368-6717-76ba-bc71-841a3d94bc02", "01a21368-672d-7013-a1e1-841a3d94bc02"]
        let length = try ShortID.measure(store(across)).idLength
        #expect(length == 15 && ShortID.of(across[0], length: length) != ShortID.of(across[1], length: length))
    }

    @Test func aUniquePartFromEitherEndNamesTheMessage() throws {
        let ids = ["01a21368-6717-76ba-bc70-841a3d94bc02", "01a21368-672d-7013-a1ec-110c3428bd2a"]
        let s = try store(ids)
        #expect(try ShortID.resolve("3d94bc02", in: s) == ids[0])
        #expect(try ShortID.resolve("01a21368-672d", in: s) == ids[1])
        #expect(try ShortID.resolve(ids[1], in: s) == ids[1], "a whole id is itself")
        #expect(throws: MsgError(.usage, "")) { try ShortID.resolve("01a21368", in: s) }
        #expect(throws: MsgError(.notFound, "")) { try ShortID.resolve("ffffffff", in: s) }
        #expect(ShortID.isCandidate("3d94") && !ShortID.isCandidate("3d9") && !ShortID.isCandidate("x@y") && !ShortID.isCandidate("FAIL"))
    }
}
