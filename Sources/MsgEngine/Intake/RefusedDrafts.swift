#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Where an inbox row that msg refuses keeps its text when the text does not fit in
/// its dead record: `DIR/<id>.draft`, the row's bytes as the application committed
/// them (`$MSG_HOME/refused` for a flush). Each file is written whole and made
/// durable, with its directory, before the row is taken out of the inbox, so a
/// crash leaves the row in the inbox or the file on disk, never neither.
///
/// Why: a 10 MB draft committed through `msg.enqueue()` was once made dead with its
/// first 64 KiB kept and the rest gone, after the application had been told yes.
public struct RefusedDrafts: Sendable {
    /// The directory the files go in, made (owner-only) with the first.
    public let directory: String

    public init(directory: String) { self.directory = directory }

    /// Keeps `draft`, the text of the row whose message id is `id`.
    /// - Returns: the file's path.
    /// - Throws: `storeIO` (`noPermission`) when it cannot be written.
    func keep(_ draft: [UInt8], id: String) throws(MsgError) -> String {
        if !SystemCalls.isDirectory(directory) {
            try SystemCalls.makeDirectories(directory, code: .storeIO)
            try SystemCalls.fsyncDirectory(SystemCalls.directory(of: directory), code: .storeIO)
        }
        let path = "\(directory)/\(id).draft"
        let file = try AtomicFile(replacing: path, mode: 0o600, code: .storeIO)
        try file.write(draft)
        try file.commit()
        return path
    }
}
