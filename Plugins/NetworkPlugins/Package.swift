// swift-tools-version:6.0
// The plugins that are a package of their own: the postgres:// store, the
// http:// and https:// transport, the tls:// transport and listener (msg's
// protocol of tcp://, from the TCPWire package, over swift-nio-ssl) and the
// smtp:// and smtps:// transport, and the web server of msg web and --metrics
// (Hummingbird). PostgresNIO and AsyncHTTPClient bring SwiftNIO, swift-nio-ssl,
// swift-nio-http2 and swift-crypto (two BoringSSL builds), which
// took a clean release build of msg from 2 to 6.4 minutes for postgres alone; in
// one package the two plugins share one build of all that. Only those who want
// them build them: scripts/build-network-plugins (scripts/test and CI do). They
// link MsgKit by path, as any out-of-tree plugin does.
import PackageDescription

/// Installed as lib/msg/plugins/lib<Name>.so beside lib/libMsgKit.so.
let pluginRpath: [LinkerSetting] = [.unsafeFlags(["-Xlinker", "-rpath=$ORIGIN/../.."])]
/// The tests run in release and use @testable for rules worth testing alone.
let testable: [SwiftSetting] = [.unsafeFlags(["-enable-testing"])]

let package = Package(
    name: "msg-network-plugins",
    products: [
        .library(name: "PostgresStore", type: .dynamic, targets: ["PostgresStore"]),
        .library(name: "HTTPTransport", type: .dynamic, targets: ["HTTPTransportPlugin"]),
        .library(name: "TLSTransport", type: .dynamic, targets: ["TLSTransport"]),
        .library(name: "SMTPTransport", type: .dynamic, targets: ["SMTPTransportPlugin"]),
        .library(name: "WebServer", type: .dynamic, targets: ["WebServer"]),
    ],
    dependencies: [
        .package(path: "../../MsgKit"),
        .package(path: "../../MsgKitTesting"),
        .package(path: "../../MsgSupport"),
        .package(path: "../../TCPWire"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // X509: the certificate's subjectAltName, parsed, for the strict name check
        // (already built here for AsyncHTTPClient).
        .package(url: "https://github.com/apple/swift-certificates", from: "1.0.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // msg web and --metrics: every package Hummingbird needs is built here already
        // for AsyncHTTPClient, so it adds only its own targets (docs/PERFORMANCE.md).
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
    ],
    targets: [
        .target(
            name: "PostgresStore",
            dependencies: [
                "TLSCommon",
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "MsgSupport", package: "MsgSupport"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: testable,
            linkerSettings: pluginRpath
        ),
        .target(
            name: "HTTPTransport",
            dependencies: [
                "TLSCommon",
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "MsgSupport", package: "MsgSupport"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: testable,
            linkerSettings: pluginRpath
        ),
        // What tls:// and smtp:// share: certificate and key files, the words for
        // TLS failures, the strict name check.
        .target(
            name: "TLSCommon",
            dependencies: [
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "MsgSupport", package: "MsgSupport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
            ]
        ),
        .target(
            name: "TLSTransport",
            dependencies: [
                "TLSCommon",
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "MsgSupport", package: "MsgSupport"),
                .product(name: "TCPWire", package: "TCPWire"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            linkerSettings: pluginRpath
        ),
        .target(
            name: "SMTPTransport",
            dependencies: [
                "TLSCommon",
                .product(name: "TCPWire", package: "TCPWire"),
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "MsgSupport", package: "MsgSupport"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: testable,
            linkerSettings: pluginRpath
        ),
        .target(
            name: "WebServer",
            dependencies: [
                "TLSCommon",
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            linkerSettings: pluginRpath
        ),
        .target(name: "SMTPTransportPlugin", dependencies: ["SMTPTransport", .product(name: "MsgKit", package: "MsgKit")],
                linkerSettings: pluginRpath),
        .target(name: "HTTPTransportPlugin", dependencies: ["HTTPTransport", .product(name: "MsgKit", package: "MsgKit")],
                linkerSettings: pluginRpath),
        .testTarget(name: "PostgresStoreTests", dependencies: [
            "PostgresStore",
            .product(name: "MsgKit", package: "MsgKit"),
            .product(name: "MsgSupport", package: "MsgSupport"),
            .product(name: "MsgKitTesting", package: "MsgKitTesting"),
        ]),
        .testTarget(name: "SMTPTransportTests", dependencies: [
            "SMTPTransport",
            .product(name: "MsgKit", package: "MsgKit"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOEmbedded", package: "swift-nio"),
        ]),
        .testTarget(name: "HTTPTransportTests", dependencies: [
            "HTTPTransport",
            .product(name: "MsgKit", package: "MsgKit"),
            .product(name: "MsgSupport", package: "MsgSupport"),
            .product(name: "MsgKitTesting", package: "MsgKitTesting"),
        ]),
    ]
)
