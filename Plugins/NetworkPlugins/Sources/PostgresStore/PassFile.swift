#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// Where the password comes from: `PGPASSWORD`, else the first matching line of
/// `PGPASSFILE` (default `~/.pgpass`), as libpq reads them. The file is skipped,
/// as libpq skips it, when others can read it.
enum PassFile {
    /// The password for `address`, or nil when none is configured.
    /// - Throws: `config` when the file is readable by others.
    static func password(for address: PostgresAddress, environment: (String) -> String? = SystemCalls.environment) throws(MsgError) -> String? {
        if let p = environment("PGPASSWORD") { return p }
        let path: String
        if let file = environment("PGPASSFILE") {
            path = file
        } else if let home = environment("HOME") {
            path = home + "/.pgpass"
        } else {
            return nil
        }
        // No file is no password (libpq's rule); one that others may read is refused.
        guard access(path, F_OK) == 0 else { return nil }
        let text = try SystemCalls.readPrivateFile(path, what: "password file")
        let host = address.isUnixSocket ? "localhost" : address.host
        return lookup(String(decoding: text, as: UTF8.self), host: host, port: address.port, database: address.database, user: address.user)
    }

    /// The password on the first line of `text` matching the others, `*` matching anything.
    /// Lines are `host:port:database:user:password`; `\:` and `\\` escape.
    static func lookup(_ text: String, host: String, port: Int, database: String, user: String) -> String? {
        // Lines split as bytes (LF or CRLF): "\r\n" is one Character in Swift.
        for raw in text.utf8.split(separator: 0x0A, omittingEmptySubsequences: true) {
            let line = Substring(String(decoding: raw.last == 0x0D ? raw.dropLast() : raw[...], as: UTF8.self))
            if line.hasPrefix("#") { continue }
            let fields = split(line)
            guard fields.count == 5 else { continue }
            let wanted = [host, String(port), database, user]
            if zip(fields, wanted).allSatisfy({ $0 == "*" || $0 == $1 }) { return fields[4] }
        }
        return nil
    }

    private static func split(_ line: Substring) -> [String] {
        var fields: [String] = []
        var current = ""
        var escaped = false
        for c in line {
            if escaped {
                current.append(c)
                escaped = false
            } else if c == "\\" {
                escaped = true
            } else if c == ":" && fields.count < 4 {
                fields.append(current)
                current = ""
            } else {
                current.append(c)
            }
        }
        fields.append(current)
        return fields
    }
}
