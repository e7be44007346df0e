// swift-tools-version:6.0
// Out-of-tree msg plugins: a transport and a store built against MsgKit by path,
// loaded by msg through MSG_PLUGIN_PATH (see ../out-of-tree-plugin.sh and
// msg-plugins(7)). The store's test runs msg's store conformance suite on it.
import PackageDescription

let package = Package(
    name: "msg-example-plugins",
    products: [
        .library(name: "JournalTransport", type: .dynamic, targets: ["JournalTransport"]),
        .library(name: "SnapshotStore", type: .dynamic, targets: ["SnapshotStore"]),
    ],
    dependencies: [
        .package(path: "../../MsgKit"),
        // Optional: the POSIX wrappers msg's own plugins use, outside the plugin ABI.
        .package(path: "../../MsgSupport"),
        // The conformance suites every store and transport must pass.
        .package(path: "../../MsgKitTesting"),
    ],
    targets: [
        .target(name: "JournalTransport", dependencies: [.product(name: "MsgKit", package: "MsgKit"),
                                                         .product(name: "MsgSupport", package: "MsgSupport")]),
        .target(name: "SnapshotStore", dependencies: [.product(name: "MsgKit", package: "MsgKit"),
                                                      .product(name: "MsgSupport", package: "MsgSupport")]),
        .testTarget(name: "SnapshotStoreTests", dependencies: ["SnapshotStore", .product(name: "MsgKit", package: "MsgKit"),
                                                               .product(name: "MsgKitTesting", package: "MsgKitTesting")]),
    ]
)
