// swift-tools-version:6.1
import PackageDescription

// An app that uses IMBridge's neutral API and testing kit, not its server. `traits: []` turns off
// IMBridge's default `Server` trait: only IMCore and IMTesting are built, and none of the server's
// remote packages (Hummingbird, the NIO family, GRDB, …) is resolved or fetched.
let package = Package(
    name: "OrderApp",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "IMBridge", path: "../..", traits: []),
    ],
    targets: [
        .target(name: "OrderApp", dependencies: [.product(name: "IMCore", package: "IMBridge")]),
        .testTarget(name: "OrderAppTests", dependencies: [
            "OrderApp", .product(name: "IMCore", package: "IMBridge"), .product(name: "IMTesting", package: "IMBridge"),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
