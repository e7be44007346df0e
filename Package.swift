// swift-tools-version:6.0
// msg: a store-and-forward message outbox for the shell. See docs/DESIGN.md and README.md.
import PackageDescription

/// The installed tree is bin/msg, lib/libMsgKit.so, lib/msg/plugins/*.so (docs/DESIGN.md 4).
let executableRpath: [LinkerSetting] = [.unsafeFlags(["-Xlinker", "-rpath=$ORIGIN/../lib"])]
let pluginRpath: [LinkerSetting] = [.unsafeFlags(["-Xlinker", "-rpath=$ORIGIN/../.."])]
let kit: Target.Dependency = .product(name: "MsgKit", package: "MsgKit")
/// What host and plugins share outside the plugin contract (a static copy in each).
let support: Target.Dependency = .product(name: "MsgSupport", package: "MsgSupport")

func plugin(_ name: String, dependencies: [Target.Dependency] = []) -> Target {
    .target(name: name, dependencies: [kit, support] + dependencies, path: "Plugins/\(name)", linkerSettings: pluginRpath)
}

let package = Package(
    name: "msg",
    products: [
        .executable(name: "msg", targets: ["msg"]),
        .library(name: "JSONFileStore", type: .dynamic, targets: ["JSONFileStore"]),
        .library(name: "StdoutTransport", type: .dynamic, targets: ["StdoutTransport"]),
        .library(name: "SQLiteStore", type: .dynamic, targets: ["SQLiteStore"]),
        .library(name: "FileDropTransport", type: .dynamic, targets: ["FileDropTransport"]),
        .library(name: "TCPTransport", type: .dynamic, targets: ["TCPTransport"]),
        .library(name: "ExecTransport", type: .dynamic, targets: ["ExecTransport"]),
        .library(name: "NATSTransport", type: .dynamic, targets: ["NATSTransport"]),
    ],
    dependencies: [
        .package(path: "MsgKit"),
        .package(path: "MsgKitTesting"),
        .package(path: "MsgSupport"),
        .package(path: "TCPWire"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Only the tcp: plugin links SwiftNIO (through TCPWire), so msg itself starts without it.
    ],
    targets: [
        .executableTarget(name: "msg", dependencies: ["MsgCLI"], linkerSettings: executableRpath),
        .target(name: "MsgCLI", dependencies: [
            "MsgEngine", "CReadline", kit, support, .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),
        .target(name: "MsgEngine", dependencies: [kit, support]),
        plugin("JSONFileStore"),
        plugin("StdoutTransport"),
        plugin("SQLiteStore", dependencies: ["CSQLite"]),
        plugin("FileDropTransport"),
        plugin("TCPTransport", dependencies: [.product(name: "TCPWire", package: "TCPWire")]),
        plugin("ExecTransport"),
        // JetStream through Debian's libnats (nats.c): a system library, so it costs the build nothing.
        .target(name: "NATSTransport", dependencies: [kit, support, "CNATS"], path: "Plugins/NATSTransport", exclude: ["CNATS"],
                linkerSettings: pluginRpath),
        .systemLibrary(name: "CNATS", path: "Plugins/NATSTransport/CNATS", pkgConfig: "libnats", providers: [.apt(["libnats-dev"])]),
        .systemLibrary(name: "CReadline", providers: [.apt(["libreadline-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .testTarget(name: "MsgKitTests", dependencies: [kit, support, .product(name: "MsgKitTesting", package: "MsgKitTesting")]),
        .testTarget(name: "PluginTests", dependencies: ["MsgEngine", kit, support, .product(name: "MsgKitTesting", package: "MsgKitTesting")]),
        .testTarget(name: "MsgEngineTests", dependencies: ["MsgEngine", kit, support, .product(name: "MsgKitTesting", package: "MsgKitTesting")]),
        .testTarget(name: "CLITests", dependencies: ["MsgEngine", kit, support, .product(name: "MsgKitTesting", package: "MsgKitTesting")]),
    ]
)
