// swift-tools-version:6.0
// The postgres:// store plugin, a package of its own: PostgresNIO brings SwiftNIO,
// swift-nio-ssl and swift-crypto (two BoringSSL builds), which took a clean release
// build of msg from 2 to 6.4 minutes. Only those who want a shared queue build it:
// scripts/build-postgres. It links MsgKit by path, as any out-of-tree plugin does.
import PackageDescription

let package = Package(
    name: "msg-postgres-store",
    products: [
        .library(name: "PostgresStore", type: .dynamic, targets: ["PostgresStore"]),
    ],
    dependencies: [
        .package(path: "../../MsgKit"),
        .package(path: "../../MsgKitTesting"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .target(
            name: "PostgresStore",
            dependencies: [
                .product(name: "MsgKit", package: "MsgKit"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
            ],
            // The tests run in release and use @testable for the URL and password rules.
            swiftSettings: [.unsafeFlags(["-enable-testing"])],
            // Installed as lib/msg/plugins/libPostgresStore.so beside lib/libMsgKit.so.
            linkerSettings: [.unsafeFlags(["-Xlinker", "-rpath=$ORIGIN/../.."])]
        ),
        .testTarget(name: "PostgresStoreTests", dependencies: [
            "PostgresStore",
            .product(name: "MsgKit", package: "MsgKit"),
            .product(name: "MsgKitTesting", package: "MsgKitTesting"),
        ]),
    ]
)
