import Foundation
import MsgKit
import MsgKitTesting
import SnapshotStore
import Testing

/// The example store passes the suite every msg store must pass.
@Suite struct SnapshotStoreTests {
    @Test func passesStoreConformance() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("snapshot-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var n = 0
        try StoreConformance.run(freshURL: {
            n += 1
            return "snapshot:\(dir)/\(n)/queue.snap"
        }, open: { url, access in try SnapshotStore(url: try PluginURL(url), access: access) })
    }
}
