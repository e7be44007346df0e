// swift-tools-version:6.0
// TCPWire: msg's NDJSON protocol over a stream (msg-tcp(7)): the sender, the
// listener, the line framing and the wire messages, with the security of the
// stream given by the plugin that registers the scheme. The tcp:// plugin of the
// main package uses it in clear text; the tls:// plugin of Plugins/NetworkPlugins,
// where swift-nio-ssl is built already, puts TLS under it. A static library: each
// of the two images carries its own copy, and none of its types crosses the plugin
// boundary.
import PackageDescription

let package = Package(
    name: "TCPWire",
    products: [
        .library(name: "TCPWire", targets: ["TCPWire"]),
    ],
    dependencies: [
        .package(path: "../MsgKit"),
        .package(path: "../MsgSupport"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    ],
    targets: [
        .target(name: "TCPWire", dependencies: [
            .product(name: "MsgKit", package: "MsgKit"),
            .product(name: "MsgSupport", package: "MsgSupport"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
        ]),
    ]
)
