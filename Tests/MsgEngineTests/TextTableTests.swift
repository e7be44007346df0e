import MsgEngine
import Testing

@Suite struct TextTableTests {
    @Test func measuresDisplayCells() {
        #expect(TextTable.displayWidth("abc") == 3)
        #expect(TextTable.displayWidth("山田") == 4, "wide")
        #expect(TextTable.displayWidth("e\u{301}") == 1, "a combining accent takes no cell")
        #expect(TextTable.displayWidth("a\u{200B}b") == 2, "zero width space")
        #expect(TextTable.displayWidth("🙂") == 2)
    }

    @Test func fitsCutsWithAnEllipsisAndFlattensLines() {
        #expect(TextTable.fit("hello", 5) == "hello")
        #expect(TextTable.fit("hello!", 5) == "hell…")
        #expect(TextTable.fit("山田太郎", 5) == "山田…", "never half a wide character")
        #expect(TextTable.fit("a\nb\tc\u{7}", 10) == "a b c", "line breaks and tabs are spaces, controls go")
        #expect(TextTable.fit("abc", 0) == "")
        #expect(TextTable.fitKeepingEnd("/a/b/c/libX.so", 9) == "…/libX.so", "a path keeps its end")
        #expect(TextTable.fitKeepingEnd("/a/libX.so", 20) == "/a/libX.so")
    }

    @Test func flexibleColumnsShareWhatIsLeftAndRowsNeverPassTheWidth() {
        let t = TextTable([.fixed("ID", 4), .flexible("A", share: 1), .flexible("B", share: 3)], width: 30)
        #expect(t.widths == [4, 5, 17], "30 - 4 - 2 gaps of 2 = 22 cells, 1:3, the rest to the last")
        let line = t.row(["1234", "山田太郎さん", String(repeating: "x", count: 40)])
        #expect(TextTable.displayWidth(line) - 1 <= 30, "\(line)")
        #expect(line == "1234  山田…  " + String(repeating: "x", count: 16) + "…\n")
    }
}
