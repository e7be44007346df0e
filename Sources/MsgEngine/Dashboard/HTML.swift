/// A page's markup, built so that every string from outside (a message's body,
/// recipients, headers, errors, fields; a query parameter) goes in as text:
/// ``text(_:)`` escapes it, and only the literals of this target are markup.
struct HTML {
    private(set) var markup = ""

    /// Markup written here (a literal of this target, never data).
    mutating func tag(_ literal: StaticString) { markup += "\(literal)" }

    /// `text` escaped, shown as text wherever it is put (an element or a quoted attribute).
    mutating func text(_ text: String) { markup += HTML.escape(text) }

    /// An element holding `text` as text: `<td class="x">text</td>`.
    mutating func element(_ name: StaticString, _ text: String, class cls: StaticString? = nil) {
        markup += "<\(name)" + (cls.map { " class=\"\($0)\"" } ?? "") + ">" + HTML.escape(text) + "</\(name)>"
    }

    /// A link to one of the dashboard's own pages: `path` is built here, its query
    /// escaped (``WebQuery/encode(_:)``), the label text.
    mutating func link(_ path: String, _ label: String, class cls: StaticString? = nil) {
        markup += "<a href=\"" + HTML.escape(path) + "\"" + (cls.map { " class=\"\($0)\"" } ?? "") + ">" + HTML.escape(label) + "</a>"
    }

    mutating func append(_ other: HTML) { markup += other.markup }

    /// `&`, `<`, `>`, `"` and `'` as entities; control characters but tab and newline as U+FFFD.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for c in s.unicodeScalars {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'": out += "&#39;"
            case "\t", "\n": out.unicodeScalars.append(c)
            default: if c.value < 0x20 || c.value == 0x7F { out += "\u{FFFD}" } else { out.unicodeScalars.append(c) }
            }
        }
        return out
    }
}
