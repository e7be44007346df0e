#if canImport(Glibc)
@preconcurrency import Glibc
#endif
import MsgKit
import MsgSupport
import NIOSSL

/// The PEM files of `tls://`: certificates anyone may read, keys only their owner
/// (read as the other secret files are: refused when others may read them, and
/// never printed).
public enum TLSFiles {
    /// The certificates in `path` (a chain, or the CAs to trust).
    /// - Throws: `config` naming the file and the parameter.
    public static func certificates(_ path: String, parameter: String) throws(MsgError) -> [NIOSSLCertificate] {
        let bytes: [UInt8]
        do throws(MsgError) {
            let fd = try SystemCalls.open(path, O_RDONLY | O_CLOEXEC, code: .config)
            defer { close(fd) }
            bytes = try SystemCalls.readToEnd(fd, code: .config, what: path)
        } catch {
            throw MsgError(.config, "tls: \(parameter)=\(path): \(error.message)")
        }
        let certificates: [NIOSSLCertificate]
        do { certificates = try NIOSSLCertificate.fromPEMBytes(bytes) } catch {
            throw MsgError(.config, "tls: \(parameter)=\(path) holds no PEM certificate that reads (\(error))")
        }
        guard !certificates.isEmpty else {
            throw MsgError(.config, "tls: \(parameter)=\(path) holds no PEM certificate (-----BEGIN CERTIFICATE-----)")
        }
        return certificates
    }

    /// The private key in `path`, which only its owner may read.
    /// - Throws: `config` naming the file (never its content).
    public static func key(_ path: String, parameter: String) throws(MsgError) -> NIOSSLPrivateKey {
        let bytes = try SystemCalls.readPrivateFile(path, what: "tls: \(parameter)")
        do { return try NIOSSLPrivateKey(bytes: bytes, format: .pem) } catch {
            throw MsgError(.config, "tls: \(parameter)=\(path) holds no PEM private key that reads")
        }
    }
}
