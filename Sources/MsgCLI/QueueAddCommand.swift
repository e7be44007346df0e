import ArgumentParser
import MsgEngine
import MsgKit

/// `msg queue add`: stores records from stdin durably, then echoes each.
struct QueueAddCommand: SessionCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Store records read on stdin durably, then print each.",
        discussion: "An id already stored is not stored twice; the stored record is printed."
    )

    @OptionGroup var global: GlobalOptions
    @OptionGroup var input: InputOptions

    func run(_ session: Session) throws {
        let store = try session.store()
        let pipeline = RecordPipeline(decode: { (line) throws(MsgError) in
            try line.withUnsafeBufferPointer { (b) throws(MsgError) in try Message(decoding: b, origin: .input) }
        }, store: store, writer: session.console.writer(), onError: input.onError, reporter: session.reporter)
        var reader = NDJSONReader(fd: session.console.input)
        try finish(try pipeline.run(&reader, progress: session.console.progress("stored")).exitCode)
    }
}
