// swift-tools-version:6.0
// MsgSupport: what msg's host and plugins share that is not the plugin contract:
// POSIX wrappers (SystemCalls), the reader of owner-only secret files, shell-word
// splitting, atomic file replacement, the damaged-file naming of stores, a fast
// random number generator, and the one process runner of exec: and the event hook
// (ProcessPool, over the C shims of CProcess), and the ledger's tree, checkpoints
// and proofs over MsgKit's hashes.
//
// It is its own package, apart from MsgKit, so that sharing a utility never changes
// the plugin ABI (docs/DESIGN.md 4): it is a static library, each image (msg, each
// plugin) carries its own copy, and none of its types crosses the plugin boundary.
// It depends on MsgKit for MsgError, the one error type of the contract.
import PackageDescription

let package = Package(
    name: "MsgSupport",
    products: [
        .library(name: "MsgSupport", targets: ["MsgSupport"]),
    ],
    dependencies: [
        .package(path: "../MsgKit"),
    ],
    targets: [
        .target(name: "MsgSupport", dependencies: [.product(name: "MsgKit", package: "MsgKit"), "CProcess"]),
        .target(name: "CProcess"),
    ]
)
