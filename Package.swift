// swift-tools-version:6.1
import PackageDescription

/// Remote products are used only with the `Server` trait (on by default).
let server: TargetDependencyCondition? = .when(traits: ["Server"])

let package = Package(
    name: "IMBridge",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "imbridge", targets: ["imbridge"]),
        .executable(name: "imbridge-bench", targets: ["imbridge-bench"]),
        .library(name: "IMCore", targets: ["IMCore"]),
        .library(name: "IMTesting", targets: ["IMTesting"]),
        // The testing kit's second kind of backend: the real adapter against an in-process sandbox (needs `Server`).
        .library(name: "IMTestingSandbox", targets: ["IMTestingSandbox"]),
        .library(name: "IMHTTP", targets: ["IMHTTP"]),
        .library(name: "IMSandbox", targets: ["IMSandbox"]),
        .library(name: "IMStore", targets: ["IMStore"]),
        .library(name: "IMRelay", targets: ["IMRelay"]),
        .library(name: "IMOutbox", targets: ["IMOutbox"]),
        .library(name: "IMTelemetry", targets: ["IMTelemetry"]),
        .library(name: "IMPositions", targets: ["IMPositions"]),
        .library(name: "IMServer", targets: ["IMServer"]),
        .library(name: "IMConfig", targets: ["IMConfig"]),
        .library(name: "IMMapping", targets: ["IMMapping"]),
        .library(name: "IMAdapterKit", targets: ["IMAdapterKit"]),
        // adapters: add library products here
        .library(name: "JMessage", targets: ["JMessage"]),
        .library(name: "RongCloud", targets: ["RongCloud"]),
        .library(name: "WuKong", targets: ["WuKong"]),
        .library(name: "NIM", targets: ["NIM"]),
    ],
    // IMCore, IMTesting and the vendors' facts targets (adapters/<Vendor>/Facts) use no remote package.
    // Everything else (the server, adapters, sandboxes, store, CLI) uses the remote packages below, each
    // only under the default `Server` trait: an app that wants the neutral API and the testing kit alone
    // depends with `traits: []`, and SwiftPM then neither resolves nor fetches any of them
    // (docs/testing-kit.md, "Depending on the kit alone").
    traits: [
        .default(enabledTraits: ["Server"]),
        .trait(name: "Server", description: "The bridge server, vendor adapters, sandboxes and CLI, with their remote packages."),
        // Off by default: only a build with it links swift-otel (docs/operations.md, "Tracing"); `make test` turns it on.
        .trait(name: "OTLP", description: "The OTLP/HTTP span exporter (swift-otel) behind bridge.yaml's `tracing:`.", enabledTraits: ["Server"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "3.12.3"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Allocation counting of `imbridge-bench costs` (the cost guard, docs/performance.md).
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.1"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", exact: "0.2.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // Spans around a message's hops (always; the no-op tracer unless `tracing:` is set) and their exporter
        // (only with the `OTLP` trait, and then OTLP/HTTP alone: no gRPC).
        .package(url: "https://github.com/apple/swift-distributed-tracing", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel", from: "1.6.0", traits: ["OTLPHTTP"]),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache", from: "2.1.1"),
        // `swift package generate-documentation` for the DocC catalogs of IMCore and IMTesting (`make docs`).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(name: "IMCore"),
        // The testing kit links each vendor's facts (its `Capabilities` preset, adapters/<Vendor>/Facts, IMCore
        // only), not the adapters, and re-exports them (docs/architecture.md).
        .target(name: "IMTesting", dependencies: ["IMCore", "WuKongFacts", "RongCloudFacts", "NIMFacts", "JMessageFacts"]),
        // `TestBackendTarget.sandbox(_:)`: an app's test run against the vendor's adapter and its sandbox in
        // this process, beside `.memory(_:)` (docs/testing-kit.md, "One test, two backends"). Needs `Server`.
        .target(name: "IMTestingSandbox", dependencies: ["IMCore", "IMTesting", "IMVendors", "IMSandbox", "IMAdapterKit", "IMMapping"]),
        .target(name: "IMHTTP", dependencies: [
            "IMCore",
            .product(name: "Hummingbird", package: "hummingbird", condition: server),
            .product(name: "AsyncHTTPClient", package: "async-http-client", condition: server),
            .product(name: "Crypto", package: "swift-crypto", condition: server),
            .product(name: "Logging", package: "swift-log", condition: server),
            .product(name: "HTTPTypes", package: "swift-http-types", condition: server),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
        ]),
        .target(name: "IMSandbox", dependencies: ["IMCore", "IMHTTP", .product(name: "GRDB", package: "GRDB.swift", condition: server)]),
        // The YAML reader of bridge.yaml and the mapping files: nodes with key paths and lines, sections,
        // durations, collected problems, redaction.
        .target(name: "IMConfig", dependencies: ["IMCore", .product(name: "Yams", package: "Yams", condition: server)]),
        // The shipped mapping files are compiled into the module (EmbeddedFiles), not a resource bundle.
        .target(name: "IMMapping", dependencies: ["IMCore", "IMConfig"],
                exclude: ["mappings"], plugins: ["EmbedShippedFiles"]),
        .executableTarget(name: "imbridge-embed", path: "Sources/imbridge-embed"),
        .plugin(name: "EmbedShippedFiles", capability: .buildTool(), dependencies: ["imbridge-embed"]),
        .target(name: "IMAdapterKit", dependencies: ["IMCore", "IMHTTP", "IMConfig", "IMMapping"]),
        // The store in three parts: its vocabulary and transaction (IMStoreCore: records, the operations a
        // driver implements, leases, the grouped writer), the PostgreSQL driver, and IMStore — `BridgeStore`,
        // which opens either driver, and the SQLite one — which re-exports IMStoreCore to its users.
        .target(name: "IMStoreCore", dependencies: [
            "IMCore", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        .target(name: "IMStorePostgres", dependencies: [
            "IMCore", "IMStoreCore", .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
            .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        .target(name: "IMStore", dependencies: [
            "IMCore", "IMStoreCore", "IMStorePostgres", .product(name: "GRDB", package: "GRDB.swift", condition: server),
            .product(name: "PostgresNIO", package: "postgres-nio", condition: server),
            .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        // What the bridge counts and shows about itself: metrics, backend health, the activity ring, the
        // last audit. Below the engine, so the server and every concept module read it without the engine.
        .target(name: "IMTelemetry", dependencies: [
            "IMCore", "IMStore", "IMConfig", "IMMapping", "IMAdapterKit", .product(name: "Logging", package: "swift-log", condition: server),
            .product(name: "CoreMetrics", package: "swift-metrics", condition: server), .product(name: "Prometheus", package: "swift-prometheus", condition: server),
        ]),
        // The outbox's vocabulary and its execution: routes and the translator that plans actions, the
        // payloads stored for them, retry and pacing policy, and `Delivery`, which carries an action out.
        .target(name: "IMOutbox", dependencies: [
            "IMCore", "IMStore", "IMHTTP", "IMConfig", "IMMapping", "IMAdapterKit", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        // Where each source was read up to: catch-up checkpoints, change-feed positions, `catch_up:` settings;
        // shared by the engine's intake and the catch-up runner.
        .target(name: "IMPositions", dependencies: [
            "IMCore", "IMStore", "IMConfig", "IMAdapterKit", "IMOutbox",
        ]),
        .target(name: "IMRelay", dependencies: [
            "IMCore", "IMStore", "IMHTTP", "IMConfig", "IMMapping", "IMAdapterKit", "IMOutbox", "IMTelemetry", "IMPositions", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        // The bridge's HTTP side and what it shows: the listener (callbacks, /healthz, /readyz, /metrics),
        // the status page, the log handler. Reads the engine (IMRelay); the engine knows nothing of it.
        .target(name: "IMServer", dependencies: [
            "IMCore", "IMHTTP", "IMStore", "IMConfig", "IMMapping", "IMAdapterKit", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions",
            .product(name: "Logging", package: "swift-log", condition: server),
            // The status page's template engine (Status/StatusPage.swift).
            .product(name: "Mustache", package: "swift-mustache", condition: server),
        ]),
        // Concept modules above the relay engine (docs/architecture.md, "Modules and their arrows").
        .target(name: "IMCatchUp", dependencies: [
            "IMCore", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMAdapterKit", "IMConfig", "IMMapping", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        .target(name: "IMMigration", dependencies: [
            "IMCore", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMAdapterKit", "IMConfig", "IMMapping", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        .target(name: "IMVerify", dependencies: [
            "IMCore", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMAdapterKit", "IMConfig", "IMMapping", .product(name: "Logging", package: "swift-log", condition: server),
        ]),
        // The registry: every vendor's adapter and sandbox, in one list.
        .target(name: "IMVendors", dependencies: [
            "IMAdapterKit", "IMSandbox",
            // vendors: add "<Name>" and "<Name>Sandbox" here
            "JMessage", "JMessageSandbox",
            "RongCloud", "RongCloudSandbox",
            "WuKong", "WuKongSandbox",
            "NIM", "NIMSandbox",
        ]),
        // Production wiring: bridge assembly and backend factories.
        .target(name: "IMBridgeApp", dependencies: [
            "IMCore", "IMHTTP", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMServer", "IMConfig", "IMMapping", "IMAdapterKit", "IMVendors",
            .product(name: "Logging", package: "swift-log", condition: server),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
            .product(name: "UnixSignals", package: "swift-service-lifecycle", condition: server),
            .product(name: "Tracing", package: "swift-distributed-tracing", condition: server),
            .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OTLP"])),
        ]),
        // The lab: sandboxes and a bridge wired together (demo, end-to-end tests).
        .target(name: "IMLab", dependencies: [
            "IMCore", "IMHTTP", "IMSandbox", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMServer", "IMBridgeApp", "IMVendors",
        ]),
        .executableTarget(name: "imbridge", dependencies: [
            "IMCore", "IMHTTP", "IMSandbox", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMServer", "IMBridgeApp", "IMLab", "IMVendors", "IMMapping", "IMAdapterKit",
            .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
            .product(name: "Logging", package: "swift-log", condition: server),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: server),
        ]),
        // Benchmarks: release builds for figures; `costs` also runs on the debug build in `make test` (CostGuardTests).
        .executableTarget(name: "imbridge-bench", dependencies: [
            "IMCore", "IMHTTP", "IMSandbox", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMServer", "IMBridgeApp", "IMLab", "IMVendors", "IMAdapterKit",
            "WuKong", "RongCloud", "NIM", "JMessage",
            .product(name: "Histogram", package: "hdrhistogram-swift", condition: server),
            .product(name: "ArgumentParser", package: "swift-argument-parser", condition: server),
        ], path: "Benchmarks", exclude: ["MallocCounting", "cost-limits.json"]),
        // Builds ordo-one's malloc interposer library (libMallocInterposerSwift.so) for `imbridge-bench costs`,
        // which finds it preloaded (LD_PRELOAD) instead of linking it (Benchmarks/CostBench.swift, `MallocCounter`).
        .target(name: "MallocCounting", dependencies: [
            .product(name: "MallocInterposerSwift", package: "malloc-interposer", condition: server),
        ], path: "Benchmarks/MallocCounting"),
        // adapters: add `.target(name: "<Name>Facts", dependencies: ["IMCore"], path: "adapters/<Name>/Facts")` and
        // `.target(name: "<Name>", dependencies: [..., "<Name>Facts"], path: "adapters/<Name>", exclude: ["Sandbox", "Facts"])` here
        .target(name: "JMessageFacts", dependencies: ["IMCore"], path: "adapters/JMessage/Facts"),
        .target(name: "JMessage", dependencies: ["IMCore", "IMHTTP", "IMConfig", "IMMapping", "IMAdapterKit", "JMessageFacts",
                                                 .product(name: "Logging", package: "swift-log", condition: server)],
                path: "adapters/JMessage",
                exclude: ["Sandbox", "Facts"]),
        .target(name: "JMessageSandbox", dependencies: ["JMessage", "IMSandbox", "IMAdapterKit", "IMCore", "IMHTTP", "IMMapping"],
                path: "adapters/JMessage/Sandbox"),
        .target(name: "RongCloudFacts", dependencies: ["IMCore"], path: "adapters/RongCloud/Facts"),
        .target(name: "RongCloud", dependencies: ["IMCore", "IMHTTP", "IMConfig", "IMMapping", "IMAdapterKit", "RongCloudFacts"], path: "adapters/RongCloud",
                exclude: ["Sandbox", "Facts"]),
        .target(name: "RongCloudSandbox", dependencies: ["RongCloud", "IMSandbox", "IMAdapterKit", "IMCore", "IMHTTP", "IMMapping"],
                path: "adapters/RongCloud/Sandbox"),
        .target(name: "WuKongFacts", dependencies: ["IMCore"], path: "adapters/WuKong/Facts"),
        .target(name: "WuKong", dependencies: ["IMCore", "IMHTTP", "IMMapping", "IMAdapterKit", "WuKongFacts"], path: "adapters/WuKong",
                exclude: ["Sandbox", "Facts"]),
        .target(name: "WuKongSandbox", dependencies: ["WuKong", "IMSandbox", "IMAdapterKit", "IMCore", "IMHTTP"], path: "adapters/WuKong/Sandbox"),
        .target(name: "NIMFacts", dependencies: ["IMCore"], path: "adapters/NIM/Facts"),
        .target(name: "NIM", dependencies: ["IMCore", "IMHTTP", "IMConfig", "IMMapping", "IMAdapterKit", "NIMFacts"], path: "adapters/NIM",
                exclude: ["Sandbox", "Facts"]),
        .target(name: "NIMSandbox", dependencies: ["NIM", "IMSandbox", "IMAdapterKit", "IMCore", "IMHTTP"], path: "adapters/NIM/Sandbox"),
        .testTarget(name: "IMCoreTests", dependencies: ["IMCore", "IMTesting"]),
        .testTarget(name: "IMTestingTests", dependencies: ["IMCore", "IMTesting"]),
        .testTarget(name: "IMTestingSandboxTests", dependencies: ["IMCore", "IMTesting", "IMTestingSandbox"]),
        .testTarget(name: "IMHTTPTests", dependencies: ["IMCore", "IMHTTP", "IMSandbox", "SandboxTestSupport"]),
        .testTarget(name: "IMMappingTests", dependencies: ["IMCore", "IMMapping"], exclude: ["Fixtures"]),
        .testTarget(name: "MappingFidelityTests", dependencies: ["IMCore", "IMConfig", "IMMapping", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMVendors", "IMAdapterKit", "IMSandbox", "IMHTTP", "WuKong", "RongCloud", "NIM", "JMessage"]),
        .testTarget(name: "IMStoreTests", dependencies: ["IMCore", "IMStore", "IMStoreCore", "IMStorePostgres", "PostgresTestSupport"]),
        // IMServer: the listener, status page and log handler tests; IMBridgeApp: the settings' tests decode
        // them through bridge.yaml's document (`BridgeConfig`).
        .testTarget(name: "IMRelayTests", dependencies: ["IMCore", "IMStore", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMTesting", "IMConfig", "IMMapping", "IMServer", "IMBridgeApp", "IMAdapterKit", "IMHTTP", "PostgresTestSupport",
                                                         .product(name: "Logging", package: "swift-log", condition: server),
                                                         .product(name: "GRDB", package: "GRDB.swift", condition: server)]),
        .testTarget(name: "MigrationEndToEndTests", dependencies: [
            "IMBridgeApp", "IMLab", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMMigration", "IMStore", "IMCore", "IMHTTP", "IMSandbox", "imbridge", "BridgeTestSupport",
            "WuKong", "RongCloud", "NIM", "JMessage",
        ]),
        .testTarget(name: "EndToEndTests", dependencies: ["IMBridgeApp", "IMLab", "IMVendors", "IMCore", "IMHTTP", "IMRelay", "IMOutbox", "IMTelemetry", "IMPositions", "IMCatchUp", "IMMigration", "IMVerify", "IMServer", "IMStore", "IMSandbox", "IMTesting", "IMAdapterKit", "IMMapping", "PostgresTestSupport", "SandboxTestSupport", "BridgeTestSupport", "imbridge",
                                                         "JMessage", "NIM", "RongCloud", "WuKong",
                                                         "JMessageSandbox", "NIMSandbox", "RongCloudSandbox", "WuKongSandbox", "SandboxTestSupport",
                                                          .product(name: "GRDB", package: "GRDB.swift", condition: server)]),
        // The fault campaign (docs/reliability.md): seeded schedules of crashes, pauses and target faults
        // against a real `imbridge run` process and the sandboxes; `make chaos`.
        .testTarget(name: "ChaosTests", dependencies: ["IMLab", "IMSandbox", "IMStore", "IMCore", "IMHTTP", "IMTesting", "IMVendors",
                                                       "IMAdapterKit", "WuKongSandbox", "RongCloudSandbox", "NIMSandbox", "imbridge", "PostgresTestSupport", "SandboxTestSupport", "BridgeTestSupport", .product(name: "GRDB", package: "GRDB.swift", condition: server)]),
        // The throwaway PostgreSQL cluster of scripts/test-postgres.sh, for the store and failover tests.
        .target(name: "PostgresTestSupport", path: "Tests/PostgresTestSupport"),
        // Shared by every adapter's sandbox tests: a callback recorder and raw HTTP helpers.
        .target(name: "SandboxTestSupport", dependencies: ["IMCore", "IMHTTP", "IMSandbox"], path: "Tests/SandboxTestSupport"),
        // The one rig for `imbridge` child processes (`BridgeProcess`) and the lab and configuration they
        // run on (`BridgeRig`): the end-to-end, migration and chaos tests.
        .target(name: "BridgeTestSupport", dependencies: ["IMCore", "IMHTTP", "IMSandbox", "IMLab", "PostgresTestSupport", "SandboxTestSupport"],
                path: "Tests/BridgeTestSupport"),
        // adapter test targets here
        .testTarget(name: "JMessageTests", dependencies: ["JMessage", "JMessageSandbox", "IMCore", "IMMapping", "IMHTTP", "IMSandbox", "IMTesting", "IMAdapterKit", "SandboxTestSupport",
                                                          .product(name: "Logging", package: "swift-log", condition: server)]),
        .testTarget(name: "RongCloudTests", dependencies: ["RongCloud", "RongCloudSandbox", "IMCore", "IMMapping", "IMHTTP", "IMSandbox", "IMTesting", "IMAdapterKit", "SandboxTestSupport"]),
        .testTarget(name: "WuKongTests", dependencies: ["WuKong", "WuKongSandbox", "IMCore", "IMHTTP", "IMSandbox", "IMTesting", "IMAdapterKit", "SandboxTestSupport"]),
        .testTarget(name: "NIMTests", dependencies: ["NIM", "NIMSandbox", "IMCore", "IMMapping", "IMHTTP", "IMSandbox", "IMTesting", "IMAdapterKit", "SandboxTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
