// swift-tools-version:6.0
// MsgKitTesting: the conformance suites every msg store and transport plugin must pass.
//
// Its own package, for the reason MsgKit is one (docs/DESIGN.md 4): a target of the
// MsgKit package that depended on the MsgKit *target* would link a static copy of
// MsgKit into every test binary beside the shared libMsgKit.so, and objects made by
// plugins would then fail to cast. Depending on MsgKit's dynamic *product* from
// another package keeps one copy.
import PackageDescription

let package = Package(
    name: "MsgKitTesting",
    products: [
        .library(name: "MsgKitTesting", targets: ["MsgKitTesting"]),
    ],
    dependencies: [
        .package(path: "../MsgKit"),
        .package(path: "../MsgSupport"),
    ],
    targets: [
        .target(name: "MsgKitTesting", dependencies: [.product(name: "MsgKit", package: "MsgKit"),
                                                     .product(name: "MsgSupport", package: "MsgSupport")]),
    ]
)
