// swift-tools-version:6.0
// MsgKit: the plugin SDK shared by the msg host and every plugin.
//
// It is its own package on purpose (see docs/DESIGN.md 4): only a dependency on a
// *dynamic* product of another package gives host and plugins one shared
// libMsgKit.so, so that a Store made by a plugin casts to `any Store` in the host.
// The conformance suites live in the sibling package MsgKitTesting for the same reason.
import PackageDescription

let package = Package(
    name: "MsgKit",
    products: [
        .library(name: "MsgKit", type: .dynamic, targets: ["MsgKit"]),
    ],
    targets: [
        .target(name: "MsgKit", dependencies: ["CCrypto"]),
        // SHA-256 and Ed25519 from the system's libcrypto, opened at first use: the
        // ledger's hashes and signatures, one copy for host and plugins.
        .target(name: "CCrypto", linkerSettings: [.linkedLibrary("dl")]),
    ]
)
