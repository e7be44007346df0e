import MsgKit
import Testing

@Suite struct JSONTests {
    @Test(arguments: [
        #"{"a":1,"b":[true,false,null],"c":"x\"y\\z\n\u00e9\ud83d\ude00","d":-0.5e+10}"#,
        #"[]"#, #"{}"#, #""""#, #"0"#, #"[1,[2,[3]]]"#,
    ])
    func roundTripsExactly(text: String) throws {
        let v = try JSONParser.parse(text)
        var w = JSONWriter()
        w.value(v)
        let again = try JSONParser.parse(w.bytes)
        #expect(again == v)
    }

    @Test func keepsNumberTextAndKeyOrder() throws {
        let v = try JSONParser.parse(#"{"z":1.50,"a":1e3,"m":-0}"#)
        var w = JSONWriter()
        w.value(v)
        #expect(String(decoding: w.bytes, as: UTF8.self) == #"{"z":1.50,"a":1e3,"m":-0}"#)
    }

    @Test(arguments: [
        ("{", "unexpected end of input in an object"), ("[1,]", "unexpected character ']'"), ("01", "unexpected text"),
        (#"{"a" 1}"#, "expected ':'"), ("tru", "invalid literal"), (#""\x""#, "invalid escape"),
        (#""\ud800""#, "unpaired surrogate"), ("\"a\u{01}\"", "control character"), ("1 2", "unexpected text"),
        ("-", "invalid number"), ("1.", "invalid number"), (String(repeating: "[", count: 600), "nesting deeper"),
    ])
    func refusesWithAReason(text: String, reason: String) {
        do {
            _ = try JSONParser.parse(text)
            Issue.record("accepted \(text)")
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }

    @Test func reportsInvalidUTF8WithItsColumn() {
        let bad: [UInt8] = Array(#"{"a":"ok"#.utf8) + [0xC3, 0x28] + Array(#""}"#.utf8)
        do {
            _ = try JSONParser.parse(bad)
            Issue.record("accepted invalid UTF-8")
        } catch {
            #expect(error.reason == "invalid UTF-8" && error.column == 9)
        }
        for seq: [UInt8] in [[0xC0, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xFF]] {
            #expect(throws: JSONParser.Failure.self) { try JSONParser.parse([0x22] + seq + [0x22]) }
        }
    }

    /// Strings of any script, with escapes or without, read as written; invalid
    /// UTF-8 after valid non-ASCII text is named at its column, whichever path read it.
    @Test func readsEveryScriptAndNamesInvalidUTF8AfterIt() throws {
        for text in ["é漢😀 plain", "Grüße\nund \"Zitat\"", String(repeating: "Ελληνικά ", count: 500), "ascii \\ only"] {
            var w = JSONWriter()
            w.string(text)
            #expect(try JSONParser.parse(w.bytes) == .string(text), "\(text.prefix(20))")
        }
        for (prefix, column) in [("é漢", 7), ("é\\n", 6)] {
            let bad: [UInt8] = [0x22] + Array(prefix.utf8) + [0xED, 0xA0, 0x80, 0x22]
            do {
                _ = try JSONParser.parse(bad)
                Issue.record("accepted a surrogate after \(prefix)")
            } catch {
                #expect(error.reason == "invalid UTF-8" && error.column == column, "\(prefix): \(error)")
            }
        }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array("\"é漢 no end".utf8)) }
    }

    /// Plain ASCII is skipped eight bytes at a time: a quote, a backslash, a control
    /// byte or a non-ASCII character at every place of a string of any length is
    /// still read where it is.
    @Test func aSpecialByteIsFoundAtEveryPlace() throws {
        for length in 0..<40 {
            for place in 0..<max(1, length) {
                for special in ["\"", "\\", "\n", "\u{1}", "é", "漢"] {
                    var text = String(repeating: "a", count: length)
                    if length > 0 {
                        let i = text.index(text.startIndex, offsetBy: place)
                        text.replaceSubrange(i...i, with: special)
                    }
                    var w = JSONWriter()
                    w.string(text)
                    #expect(try JSONParser.parse(w.bytes) == .string(text), "length \(length), \(special) at \(place)")
                }
            }
        }
        // Unterminated after a long plain run, and a raw control byte there.
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(("\"" + String(repeating: "x", count: 37)).utf8)) }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(Array(("\"" + String(repeating: "x", count: 21) + "\u{1}\"").utf8)) }
    }

    @Test func escapesControlCharacters() {
        var w = JSONWriter()
        w.string("a\u{0}b\u{1F}c\td\"e\\")
        #expect(String(decoding: w.bytes, as: UTF8.self) == #""a\u0000b\u001fc\td\"e\\""#)
    }
}
