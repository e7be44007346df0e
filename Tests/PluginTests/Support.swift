#if canImport(Glibc)
import Glibc
#endif
import MsgEngine
import MsgKit

/// A new private temporary directory.
func temporaryDirectory() -> String {
    var template = Array("/tmp/msg-test-XXXXXX".utf8CString)
    let path = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
    return String(cString: path!)
}

/// The loader as msg itself uses it: plugins from the build directory.
let loader = PluginLoader()

extension Transport {
    /// Delivers messages as a claim would hand them over: encoded.
    func deliver(_ messages: [Message], deadline: MsgDuration) -> [DeliveryOutcome] {
        deliver(messages.map { EncodedMessage($0) }, deadline: deadline)
    }
}
