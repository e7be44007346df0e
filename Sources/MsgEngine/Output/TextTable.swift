#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport

/// A table for people at a terminal: columns sized in display cells (a CJK
/// character takes two, a combining mark none), rows that never wrap.
///
/// Fixed columns keep their width; the flexible ones share what the terminal has
/// left, and a cell too wide for its column is cut with `…`. Rows stream: the
/// widths are decided once, before the first row, so a listing of a million
/// records is never held to measure it.
public struct TextTable: Sendable {
    /// One column: its header, and a fixed width or a share of the room left.
    public struct Column: Sendable {
        public var header: String
        public var width: Int?
        public var share: Int
        /// A fixed-width column.
        public static func fixed(_ header: String, _ width: Int) -> Column { Column(header: header, width: width, share: 0) }
        /// A column that gets `share` parts of the room left, at least its header's width.
        public static func flexible(_ header: String, share: Int) -> Column { Column(header: header, width: nil, share: share) }
    }

    /// The width of each column, in display cells.
    public let widths: [Int]
    private let headers: [String]

    /// Widths for `columns` in a terminal `width` cells wide (nil: as wide as the
    /// flexible columns like, 12 cells per share).
    public init(_ columns: [Column], width: Int?) {
        let gaps = 2 * (columns.count - 1)
        let fixed = columns.compactMap(\.width).reduce(0, +)
        let shares = columns.map(\.share).reduce(0, +)
        let room = width.map { max(0, $0 - fixed - gaps) } ?? shares * 12
        var widths = columns.map { c -> Int in
            if let w = c.width { return w }
            return max(Self.displayWidth(c.header), shares == 0 ? 0 : room * c.share / shares)
        }
        // What rounding left over goes to the last flexible column.
        if width != nil, let last = columns.lastIndex(where: { $0.width == nil }) {
            widths[last] += max(0, room - widths.enumerated().filter { columns[$0.offset].width == nil }.map(\.element).reduce(0, +))
        }
        self.widths = widths
        headers = columns.map(\.header)
    }

    /// The header line.
    public var header: String { row(headers) }

    /// One line: each cell cut or padded to its column, two spaces between, no
    /// trailing blanks.
    public func row(_ cells: [String]) -> String {
        var line = ""
        for (i, cell) in cells.enumerated() {
            let text = Self.fit(cell, widths[i])
            line += text
            if i < cells.count - 1 { line += String(repeating: " ", count: widths[i] - Self.displayWidth(text) + 2) }
        }
        while line.last == " " { line.removeLast() }
        return line + "\n"
    }

    /// `text` on one line within `width` cells: line breaks and tabs become spaces,
    /// control characters go, and what does not fit is cut with `…`.
    public static func fit(_ text: String, _ width: Int) -> String {
        var out = ""
        var used = 0
        var scalars = text.unicodeScalars.makeIterator()
        while let s = scalars.next() {
            let c: Unicode.Scalar = s == "\n" || s == "\r" || s == "\t" ? " " : s
            if c.value < 0x20 || (0x7F..<0xA0).contains(c.value) { continue }
            let w = cells(c)
            if used + w > width {
                // Room for the ellipsis: drop what it needs.
                while used + 1 > width, let last = out.unicodeScalars.last {
                    out.unicodeScalars.removeLast()
                    used -= cells(last)
                }
                return width > 0 ? out + "…" : out
            }
            out.unicodeScalars.append(c)
            used += w
        }
        return out
    }

    /// `text` with its control characters written as escapes (`\n`, `\r`, `\t`,
    /// `\x1b`): for a key shown in a table, where a line break must neither break
    /// the row nor pass for a space.
    public static func escaped(_ text: String) -> String {
        guard text.unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) }) else { return text }
        var out = ""
        for s in text.unicodeScalars {
            switch s {
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where s.value < 0x20 || (0x7F..<0xA0).contains(s.value):
                out += "\\x" + (s.value < 16 ? "0" : "") + String(s.value, radix: 16)
            default: out.unicodeScalars.append(s)
            }
        }
        return out
    }

    /// A table whose columns are as wide as their widest cell (with `escaped` cells),
    /// written whole: for short listings such as `queue stats` and `msg destinations`.
    public static func render(header: [String], rows: [[String]]) -> String {
        let cells = rows.map { $0.map(escaped) }
        let widths = header.indices.map { i in max(displayWidth(header[i]), cells.map { displayWidth($0[i]) }.max() ?? 0) }
        let table = TextTable(widths.enumerated().map { .fixed(header[$0.offset], $0.element) }, width: nil)
        return table.header + cells.map(table.row).joined()
    }

    /// `text` within `width` cells, cut at its start (`…/release/libX.so`): for paths,
    /// whose end says the most.
    public static func fitKeepingEnd(_ text: String, _ width: Int) -> String {
        guard displayWidth(text) > width, width > 0 else { return fit(text, width) }
        let reversed = String(String.UnicodeScalarView(text.unicodeScalars.reversed()))
        let kept = fit(reversed, width).unicodeScalars.dropLast()  // its own ellipsis
        return "…" + String(String.UnicodeScalarView(kept.reversed()))
    }

    /// How many terminal cells `text` takes.
    public static func displayWidth(_ text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + cells($1) }
    }

    /// Cells one scalar takes: 0 for combining marks and zero-width ones, 2 for East
    /// Asian wide and fullwidth ones and emoji, else 1.
    static func cells(_ s: Unicode.Scalar) -> Int {
        let v = s.value
        if v == 0x200B || v == 0x200C || v == 0x200D || v == 0xFEFF { return 0 }
        switch s.properties.generalCategory {
        case .nonspacingMark, .enclosingMark, .format: return 0
        default: break
        }
        let wide: [ClosedRange<UInt32>] = [
            0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF, 0xA000...0xA4CF,
            0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60, 0xFFE0...0xFFE6,
            0x1F300...0x1F64F, 0x1F900...0x1F9FF, 0x20000...0x2FFFD, 0x30000...0x3FFFD,
        ]
        return wide.contains { $0.contains(v) } ? 2 : 1
    }

}
