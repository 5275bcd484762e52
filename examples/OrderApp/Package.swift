// swift-tools-version:6.1
import PackageDescription

// An app that uses IMBridge's neutral API and testing kit, not its server. By default IMBridge's `Server`
// trait is off: only IMCore and IMTesting are built, and none of the server's remote packages (Hummingbird,
// the NIO family, GRDB, …) is resolved or fetched; the tests run in memory.
//
// With this package's own `Sandbox` trait (`swift test --traits Sandbox`), IMBridge's `Server` trait is
// turned on and the tests that take a `TestBackendTarget` also run against each vendor's real adapter
// talking to an in-process sandbox (`IMTestingSandbox`): one test, two backends.
let package = Package(
    name: "OrderApp",
    platforms: [.macOS(.v15)],
    traits: [
        .trait(name: "Sandbox", description: "Also run the two-backend tests against the adapters and in-process sandboxes (pulls IMBridge's server stack)."),
    ],
    dependencies: [
        .package(name: "IMBridge", path: "../..", traits: [.trait(name: "Server", condition: .when(traits: ["Sandbox"]))]),
    ],
    targets: [
        .target(name: "OrderApp", dependencies: [.product(name: "IMCore", package: "IMBridge")]),
        .testTarget(name: "OrderAppTests", dependencies: [
            "OrderApp", .product(name: "IMCore", package: "IMBridge"), .product(name: "IMTesting", package: "IMBridge"),
            .product(name: "IMTestingSandbox", package: "IMBridge", condition: .when(traits: ["Sandbox"])),
        ]),
    ],
    swiftLanguageModes: [.v6]
)
