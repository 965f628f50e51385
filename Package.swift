// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "LiveList",
    platforms: [.macOS(.v14), .iOS(.v17), .tvOS(.v17), .visionOS(.v1)],
    products: [
        .library(name: "ListDiff", targets: ["ListDiff"]),
        .library(name: "ListPresenter", targets: ["ListPresenter"]),
        .library(name: "LiveQueryCore", targets: ["LiveQueryCore"]),
        .library(name: "LiveQueryPresenting", targets: ["LiveQueryPresenting"]),
        .library(name: "LiveQuery", targets: ["LiveQuery"]),
        .library(name: "ListTesting", targets: ["ListTesting"]),
        .library(name: "LiveQueryUI", targets: ["LiveQueryUI"]),
        .library(name: "LiveListUIKit", targets: ["LiveListUIKit"]),
        .library(name: "LiveListWire", targets: ["LiveListWire"]),
        .library(name: "LiveListServer", targets: ["LiveListServer"]),
        .library(name: "LiveListServerSQLite", targets: ["LiveListServerSQLite"]),
        .library(name: "LiveListClient", targets: ["LiveListClient"]),
        .library(name: "LiveListOffline", targets: ["LiveListOffline"]),
        .library(name: "LiveQueryPostgres", targets: ["LiveQueryPostgres"]),
        .library(name: "LiveQueryPostgresUI", targets: ["LiveQueryPostgresUI"]),
        .library(name: "LiveListServerPostgres", targets: ["LiveListServerPostgres"]),
        .executable(name: "livelist", targets: ["livelist"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // The server and the client only: an app that shows local lists never builds them.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket", from: "2.8.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.7.0"),
        // The server's metrics: the API libraries record through, and its Prometheus registry
        // (`GET /metrics` in the text format, written by the library, not by hand).
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        // The server's bounded caches (insertion-ordered, evicted from the front).
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        // WebSocket close codes (NIOWebSocket), already in the graph through hummingbird-websocket.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.80.0"),
        // Measures what permessage-deflate sends (the benchmarks); in the graph through hummingbird-websocket.
        .package(url: "https://github.com/adam-fowler/compress-nio.git", from: "1.5.0"),
        // The PostgreSQL engine only: an app that follows SQLite never builds it.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // TLS for PostgreSQL URLs (sslmode=require); in the graph through postgres-nio.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        // `livelist serve --config`: published queries in YAML.
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.0"),
        // Counts allocations for `livelist bench`; only the `livelist-allocations` helper links it.
        .package(url: "https://github.com/ordo-one/malloc-interposer", from: "1.6.0"),
    ],
    targets: [
        .target(name: "ListDiff"),
        .target(name: "ListPresenter", dependencies: ["ListDiff"]),
        // What a live query is whatever its engine: the index, tracking, results, events and the
        // row cache. No database, no GRDB, no presenter: a server links it without any UI.
        .target(name: "LiveQueryCore", dependencies: ["ListDiff"]),
        // What a live query's list source keeps and does for a presenter whatever its engine (the
        // relay of results and failures, the row cache as a record provider): the bridge the
        // engines' UI modules share.
        .target(name: "LiveQueryPresenting", dependencies: ["ListDiff", "ListPresenter", "LiveQueryCore"]),
        // SQLite's engine, through GRDB.
        .target(name: "LiveQuery", dependencies: [
            "ListDiff", "LiveQueryCore",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ]),
        // libpq, for PostgreSQL's streaming replication protocol (postgres-nio does not speak it).
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"]), .brew(["libpq"])]),
        // The PostgreSQL engine: planning, PostgreSQL's order, capture through the replication stream.
        .target(name: "LiveQueryPostgres", dependencies: [
            "ListDiff", "LiveQueryCore", "CLibPQ",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "NIOPosix", package: "swift-nio"),
            .product(name: "NIOSSL", package: "swift-nio-ssl"),
        ]),
        // A PostgreSQL live query as a list controller's source, as LiveQueryUI is SQLite's.
        .target(name: "LiveQueryPostgresUI", dependencies: [
            "ListDiff", "ListPresenter", "LiveQueryCore", "LiveQueryPresenting", "LiveQueryPostgres",
        ]),
        // A live query, its row cache, a presenter and a cell source as one object for list views.
        .target(name: "LiveQueryUI", dependencies: [
            "ListDiff", "ListPresenter", "LiveQueryCore", "LiveQueryPresenting", "LiveQuery",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Thin UIKit/AppKit adapters; empty on Linux.
        .target(name: "LiveListUIKit", dependencies: ["ListDiff", "ListPresenter"]),
        // The protocol's messages and values, shared by the server and every Swift client.
        .target(name: "LiveListWire", dependencies: ["ListDiff"]),
        // Published live queries over WebSocket, embeddable in an app's Hummingbird router. Its
        // resource `Web` is the web client (the repository's `Web/` links to it), which it serves.
        .target(name: "LiveListServer", dependencies: [
            "ListDiff", "LiveQueryCore", "LiveListWire",
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "HummingbirdCore", package: "hummingbird"),
            .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "CoreMetrics", package: "swift-metrics"),
            .product(name: "Prometheus", package: "swift-prometheus"),
            .product(name: "NIOWebSocket", package: "swift-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
            .product(name: "OrderedCollections", package: "swift-collections"),
        ], resources: [.copy("Web")]),
        // The server over SQLite: its engine and the GRDB-database conveniences.
        .target(name: "LiveListServerSQLite", dependencies: [
            "ListDiff", "LiveQuery", "LiveListWire", "LiveListServer",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // The server over PostgreSQL: the one module that needs both Hummingbird and postgres-nio.
        .target(name: "LiveListServerPostgres", dependencies: [
            "ListDiff", "LiveQueryCore", "LiveListWire", "LiveListServer", "LiveQueryPostgres",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        // A remote live query with the local one's shape, for ListPresenter; no database, no diff.
        .target(name: "LiveListClient", dependencies: [
            "ListDiff", "ListPresenter", "LiveListWire",
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "HummingbirdWSCompression", package: "hummingbird-websocket"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        // A remote list and its pending mutations kept in a local SQLite file, for offline launches.
        .target(name: "LiveListOffline", dependencies: [
            "ListPresenter", "LiveListClient", "LiveListWire",
            .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The headless view conforms to ListPresenter's ListTarget, so apps can test their presenter.
        .target(name: "ListTesting", dependencies: ["ListDiff", "ListPresenter"]),
        // Code shared by the command-line tools: JSON values and the benchmarks.
        .target(name: "LiveListTools", dependencies: [
            "ListDiff", "LiveQueryPresenting", "LiveListWire", "LiveListServer", "LiveListServerSQLite", "LiveListClient", "LiveListOffline",
            .product(name: "Logging", package: "swift-log"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"), "ListPresenter", "ListTesting", "LiveQuery",
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "GRDBSQLite", package: "GRDB.swift"),
            .product(name: "CompressNIO", package: "compress-nio"),
            .product(name: "NIOCore", package: "swift-nio"),
            // The fan-out load generator's bare connections.
            .product(name: "NIOPosix", package: "swift-nio"),
            // The pg.* benchmarks: a server given by URL, or a throwaway cluster.
            "LiveQueryPostgres", "LiveListServerPostgres", "ScratchPostgres", "DroppingTransport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
        ]),
        // What the `livelist` command reads from files — `serve --config`'s YAML, `diff`'s
        // snapshots — as a library, so that the fuzz targets read them as the command does.
        .target(name: "LiveListCommands", dependencies: [
            "ListDiff", "LiveListWire", "LiveListServer",
            .product(name: "Yams", package: "Yams"),
            .product(name: "JWTKit", package: "jwt-kit"),
        ]),
        .executableTarget(
            name: "livelist",
            dependencies: [
                "ListDiff",
                "ListTesting",
                "LiveListCommands",
                "LiveListTools",
                "ListPresenter",
                "LiveQuery",
                "LiveListServer",
                "LiveListServerSQLite",
                "LiveListServerPostgres",
                "LiveQueryPostgres",
                "LiveListClient",
                "LiveListWire",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .executableTarget(
            name: "livelist-allocations",
            dependencies: [
                "LiveListTools",
                "LiveListWire",
                .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
            ]
        ),
        .testTarget(name: "ListDiffTests", dependencies: ["ListDiff", "ListTesting"]),
        .testTarget(name: "ListTestingTests", dependencies: ["ListDiff", "ListTesting"]),
        .testTarget(name: "LiveQueryTests", dependencies: [
            "ListDiff", "ListPresenter", "ListTesting", "LiveQueryCore", "LiveQuery", "OwnThread", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // The engine-independent core alone: no GRDB, no database.
        .testTarget(name: "LiveQueryCoreTests", dependencies: ["ListDiff", "ListTesting", "LiveQueryCore"]),
        // The offline store's decisions, without a server.
        .testTarget(name: "LiveListOfflineTests", dependencies: ["LiveListOffline"]),
        .testTarget(name: "LiveListWireTests", dependencies: ["LiveListWire", "ListDiff", "ListTesting"]),
        // The Swift client without a server: its list model and the decoding of rows into records.
        .testTarget(name: "LiveListClientTests", dependencies: ["LiveListClient", "LiveListWire", "ListDiff", "ListPresenter"]),
        .testTarget(name: "LiveListServerTests", dependencies: [
            "ListDiff", "ListPresenter", "ListTesting", "LiveQueryCore", "LiveQuery", "LiveListWire", "LiveListServer", "LiveListServerSQLite",
            "LiveListClient", "LiveListOffline", "ScratchPostgres", "OwnThread", "DroppingTransport",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "GRDB", package: "GRDB.swift"),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            .product(name: "HummingbirdWSClient", package: "hummingbird-websocket"),
            .product(name: "JWTKit", package: "jwt-kit"),
            .product(name: "HTTPTypes", package: "swift-http-types"),
            .product(name: "Hummingbird", package: "hummingbird"),
            .product(name: "Logging", package: "swift-log"),
            .product(name: "NIOCore", package: "swift-nio"),
        ]),
        // Blocking calls from async code, each on a thread of its own (tests and benchmarks).
        .target(name: "OwnThread"),
        // A client transport whose connections can be cut at will (tests and benchmarks).
        .target(name: "DroppingTransport", dependencies: ["ListDiff", "LiveListClient"]),
        // A throwaway PostgreSQL cluster (initdb, pg_ctl) for the tests and the benchmarks.
        .target(name: "ScratchPostgres", dependencies: [
            "ListDiff", "OwnThread",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "LiveQueryPostgresTests", dependencies: [
            "ListDiff", "ListPresenter", "ListTesting", "LiveQueryCore", "LiveQueryPostgres", "LiveQueryPostgresUI", "ScratchPostgres", "LiveListWire",
            .product(name: "PostgresNIO", package: "postgres-nio"),
            .product(name: "Logging", package: "swift-log"),
        ]),
        .testTarget(name: "ListPresenterTests", dependencies: ["ListDiff", "ListPresenter", "ListTesting"]),
        .testTarget(name: "LiveQueryUITests", dependencies: [
            "ListDiff", "ListPresenter", "ListTesting", "LiveQueryCore", "LiveQuery", "LiveQueryUI", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Compiles every Swift block of the README, docs/, the DocC catalogs and the doc comments,
        // one file each (Examples/), with only the imports it shows.
        .testTarget(
            name: "DocumentationTests",
            dependencies: [
                "ListDiff", "ListPresenter", "ListTesting", "LiveQuery", "LiveQueryUI", "LiveListUIKit",
                "LiveQueryCore", "LiveListWire", "LiveListServer", "LiveListServerSQLite", "LiveListClient", "LiveQueryPostgres", "LiveQueryPostgresUI",
                "LiveListServerPostgres", "LiveListOffline",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "JWTKit", package: "jwt-kit"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // The music app of the first-hour review, written from the README alone.
        .testTarget(name: "MusicAppTests", dependencies: [
            "ListDiff", "ListPresenter", "ListTesting", "LiveQuery", "LiveQueryUI", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Runs the built `livelist` binary, as scripts and CI do.
        .testTarget(name: "LiveListCLITests", dependencies: [
            "livelist", "livelist-allocations", "OwnThread", .product(name: "GRDB", package: "GRDB.swift"),
        ]),
        // Fuzz targets, one per reader of bytes from outside (docs/SECURITY.md): built as usual they
        // replay the files given (Tests/Fuzz/<name>/, the corpus and every crash's input); built by
        // Scripts/fuzz.sh (-DLIVELIST_FUZZ, -sanitize=fuzzer,address) they run libFuzzer. Each links
        // only the modules whose code it reads.
        .target(name: "FuzzSupport", path: "Sources/Fuzz/Support"),
        .executableTarget(name: "fuzz-client-messages", dependencies: ["FuzzSupport", "LiveListWire", "LiveListServer"],
                          path: "Sources/Fuzz/client-messages"),
        .executableTarget(name: "fuzz-server-messages", dependencies: [
            "FuzzSupport", "ListDiff", "ListPresenter", "ListTesting", "LiveListWire", "LiveListClient",
        ], path: "Sources/Fuzz/server-messages"),
        .executableTarget(name: "fuzz-replication", dependencies: ["FuzzSupport", "LiveQueryPostgres"], path: "Sources/Fuzz/replication"),
        .executableTarget(name: "fuzz-postgres-sql", dependencies: ["FuzzSupport", "LiveQueryPostgres"], path: "Sources/Fuzz/postgres-sql"),
        .executableTarget(name: "fuzz-sqlite-sql", dependencies: [
            "FuzzSupport", "LiveQuery", .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
        ], path: "Sources/Fuzz/sqlite-sql"),
        .executableTarget(name: "fuzz-configuration", dependencies: ["FuzzSupport", "LiveListCommands", "LiveListServer"],
                          path: "Sources/Fuzz/configuration"),
        .executableTarget(name: "fuzz-offline-store", dependencies: [
            "FuzzSupport", "ListDiff", "ListPresenter", "ListTesting", "LiveListClient", "LiveListOffline", "LiveListWire",
            .product(name: "GRDB", package: "GRDB.swift"),
        ], path: "Sources/Fuzz/offline-store"),
        .executableTarget(name: "fuzz-diff-input", dependencies: ["FuzzSupport", "ListDiff", "ListTesting", "LiveListCommands", "LiveListWire"],
                          path: "Sources/Fuzz/diff-input"),
    ],
    swiftLanguageModes: [.v6]
)

// `Scripts/fuzz.sh ci` (CI's fuzz step): the fuzz targets built in the release build folder with
// only this package's modules instrumented for libFuzzer and AddressSanitizer — the dependencies,
// built there already for `livelist`, are reused as they are, so the step compiles this package
// alone. `Scripts/fuzz.sh TARGET SECONDS` instruments everything, in a folder of its own.
if Context.environment["LIVELIST_FUZZ_BUILD"] == "1" {
    for target in package.targets where target.type == .regular || target.type == .executable {
        target.swiftSettings = (target.swiftSettings ?? []) + [.unsafeFlags(["-sanitize=fuzzer,address", "-DLIVELIST_FUZZ"])]
        if target.name.hasPrefix("fuzz-") {
            target.linkerSettings = (target.linkerSettings ?? []) + [.unsafeFlags(["-sanitize=fuzzer,address", "-use-ld=lld"])]
        }
    }
}
