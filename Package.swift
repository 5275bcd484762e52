// swift-tools-version:6.0
import PackageDescription

let package = Package(
    name: "IMBridge",
    platforms: [.macOS(.v14)],
    products: [
        .library(name: "IMCore", targets: ["IMCore"]),
        .library(name: "IMTesting", targets: ["IMTesting"]),
        .library(name: "IMSandbox", targets: ["IMSandbox"]),
        // adapter: WuKong
        .library(name: "WuKong", targets: ["WuKong"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
    ],
    targets: [
        .target(name: "IMCore"),
        .target(name: "IMTesting", dependencies: ["IMCore"]),
        .target(name: "IMSandbox", dependencies: [
            "IMCore",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "AsyncHTTPClient", package: "async-http-client"),
            .product(name: "Crypto", package: "swift-crypto"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // adapter: WuKong
        .target(name: "WuKong", dependencies: ["IMCore"], path: "adapters/WuKong"),
        .testTarget(name: "WuKongTests", dependencies: ["WuKong", "IMCore", "IMTesting"]),
        .testTarget(name: "IMCoreTests", dependencies: ["IMCore", "IMTesting"]),
        .testTarget(name: "IMTestingTests", dependencies: ["IMCore", "IMTesting"]),
    ],
    swiftLanguageModes: [.v6]
)
