// swift-tools-version:6.0
// An out-of-tree msg plugin: a transport built against MsgKit by path, loaded by
// msg through MSG_PLUGIN_PATH (see ../out-of-tree-plugin.sh and msg-plugins(7)).
import PackageDescription

let package = Package(
    name: "msg-journal-transport",
    products: [
        .library(name: "JournalTransport", type: .dynamic, targets: ["JournalTransport"]),
    ],
    dependencies: [
        .package(path: "../../MsgKit"),
        // Optional: the POSIX wrappers msg's own plugins use, outside the plugin ABI.
        .package(path: "../../MsgSupport"),
    ],
    targets: [
        .target(name: "JournalTransport", dependencies: [.product(name: "MsgKit", package: "MsgKit"),
                                                         .product(name: "MsgSupport", package: "MsgSupport")]),
    ]
)
