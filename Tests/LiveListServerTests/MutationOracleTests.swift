import DroppingTransport
import Foundation
import GRDB
import ListTesting
import LiveListClient
import LiveListServer
import LiveListServerSQLite
import LiveListWire
import Testing

/// The exactly-once promise against an oracle: several clients send random mutations, pipelined,
/// while their connections are cut at random and the server restarts; each client's mutations are
/// then applied once each, in its numbering order, the database equals their serial application,
/// refusals are exactly those the serial application predicts, and every list equals the SELECT.
@Suite("Mutations against an oracle", .serialized, .timeLimit(.minutes(3)))
struct MutationOracleTests {
    static let mutations = [
        // Order- and repeat-sensitive: a mutation applied twice, or two swapped, changes the value.
        PublishedMutation(name: "step", parameters: [QueryParameter("client", type: .text), QueryParameter("k", type: .integer)], statements: [
            .init("INSERT INTO tally (client, value) VALUES (:client, 0) ON CONFLICT (client) DO NOTHING"),
            .init("UPDATE tally SET value = (value * 31 + :k) % 1000000007 WHERE client = :client"),
            .init("INSERT INTO step_log (client, k) VALUES (:client, :k)"),
        ]),
        // A row of the inbox list the clients show, under an identity the client chose (its pending
        // row's).
        PublishedMutation(name: "note", parameters: [QueryParameter("id", type: .integer), QueryParameter("client", type: .text),
                                                     QueryParameter("k", type: .integer), QueryParameter("subject", type: .text)], statements: [
            .init("INSERT INTO message (id, day, sender, subject, folder) VALUES (:id, :k, :client, :subject, 'inbox')"),
        ]),
        // Refused (`conflict`) unless the client's note of day k is in the inbox.
        PublishedMutation(name: "archive", parameters: [QueryParameter("client", type: .text), QueryParameter("k", type: .integer)], statements: [
            .init("UPDATE message SET folder = 'archive' WHERE sender = :client AND day = :k AND folder = 'inbox'", mustChangeRows: true),
        ]),
    ]

    enum Operation: Sendable {
        case step(Int64)
        /// A note: its identity, day and subject.
        case note(Int64, Int64, String)
        case archive(Int64)

        func call(client: String) -> (name: String, arguments: [String: WireValue]) {
            switch self {
            case let .step(k): ("step", ["client": .text(client), "k": .integer(k)])
            case let .note(id, k, subject): ("note", ["id": .integer(id), "client": .text(client), "k": .integer(k), "subject": .text(subject)])
            case let .archive(k): ("archive", ["client": .text(client), "k": .integer(k)])
            }
        }

        /// What the client expects on its list: a note's row, or the rows of its notes of the day
        /// gone (`before`: the operations sent before this one).
        func expected(client: String, before: ArraySlice<Operation>) -> [PendingChange] {
            switch self {
            case .step: []
            case let .note(id, k, subject):
                [.insert(id: .integer(id), values: ["id": .integer(id), "day": .integer(k), "sender": .text(client), "subject": .text(subject)])]
            case let .archive(k):
                before.compactMap { operation in
                    if case let .note(id, day, _) = operation, day == k { return .delete(id: .integer(id)) }
                    return nil
                }
            }
        }
    }

    /// What one mutation came to: its number, and whether it was refused as a conflict.
    struct Outcome: Sendable {
        var id: Int64
        var refused: Bool
        /// Answered as a mutation the server had applied already (it was sent again).
        var duplicate = false
    }

    /// One client's mutations applied serially, in number order: what the database must hold.
    struct Serial {
        var tally: Int64?
        var steps: [Int64] = []
        /// The notes in the order sent: their day, and whether they are archived.
        var notes: [(day: Int64, archived: Bool)] = []
        var refusals: Set<Int64> = []

        mutating func apply(_ operation: Operation, id: Int64) {
            switch operation {
            case let .step(k):
                tally = ((tally ?? 0) * 31 + k) % 1_000_000_007
                steps.append(k)
            case let .note(_, k, _):
                notes.append((k, false))
            case let .archive(k):
                let inbox = notes.indices.filter { notes[$0].day == k && !notes[$0].archived }
                if inbox.isEmpty { refusals.insert(id) }
                for index in inbox { notes[index].archived = true }
            }
        }
    }

    /// Sends `operations[index]` of `client` through `mutator`, its expected effect shown in `list`:
    /// what it came to.
    @MainActor
    static func send(_ operations: [Operation], _ index: Int, client: String, by mutator: RemoteMutator,
                     showingIn list: RemoteLiveQuery) -> Task<Outcome, any Error> {
        let operation = operations[index]
        let (name, arguments) = operation.call(client: client)
        let effects = [PendingEffect(list, operation.expected(client: client, before: operations[..<index]))]
        return Task { @MainActor in
            do {
                let mutated = try await mutator.mutate(name, arguments: arguments, expecting: effects)
                return Outcome(id: mutated.id, refused: false, duplicate: mutated.duplicate)
            } catch let RemoteListError.server(error) where error.code == .conflict {
                return Outcome(id: error.mutation?.id ?? -1, refused: true)
            }
        }
    }

    static func randomOperations(_ count: Int, client: Int, _ random: inout SeededRandomNumberGenerator) -> [Operation] {
        var days: [Int64] = []
        return (0..<count).map { index in
            switch random.next(upTo: 4) {
            case 0, 1: return .step(Int64(random.next(upTo: 1_000)))
            case 2:
                // Days from 1,000 up: the fixture's own rows have smaller ones.
                let k = Int64(1_000 + random.next(upTo: 8))
                days.append(k)
                return .note(Int64(1_000_000 * (client + 1) + index), k, WireFixture.text(&random))
            default:
                // Mostly a note sent before (maybe archived already), sometimes none.
                return .archive(days.isEmpty || random.next(upTo: 4) == 0 ? Int64(2_000 + random.next(upTo: 5)) : days[random.next(upTo: days.count)])
            }
        }
    }

    @Test("pipelined mutations of three clients, each showing its expected effect as pending rows, through cut connections and a server restart: each applied once, in order, as the serial oracle says; no row shown twice")
    @MainActor
    func oracle() async throws {
        let seed = SeededRandomNumberGenerator.testSeed("mutation oracle")
        var random = SeededRandomNumberGenerator(seed: seed)
        var fixture = try await WireFixture.start(rows: 40, seed: seed, mutations: Self.mutations)
        try await fixture.pool.write { db in
            try db.execute(sql: "CREATE TABLE tally (client TEXT PRIMARY KEY, value INTEGER NOT NULL)")
            try db.execute(sql: "CREATE TABLE step_log (id INTEGER PRIMARY KEY, client TEXT NOT NULL, k INTEGER NOT NULL)")
        }
        let transport = DroppingTransport()
        let names = ["c0", "c1", "ü\u{308}-c2"]
        let mutators = names.map { RemoteMutator(url: fixture.url, client: $0, transport: transport) }
        let lists = names.map { _ in PendingChangesTests.Watched(url: fixture.url, window: 0..<60, viewportRows: 10, transport: transport) }
        let operations = names.indices.map { Self.randomOperations(40, client: $0, &random) }
        // A fourth client: livelist.js in node, with its own cuts, through the same restart.
        let script = JSClient.start(url: fixture.url, client: "js-c3", seed: random.next(), count: 40, index: 3)
        // The lists hold their rows before the first mutation: a pending row is laid over rows held
        // (on a loaded machine, mutations sent before the first state could all be answered first).
        try await eventually("every list holds its first state", seconds: 20) { lists.allSatisfy { $0.remote.model.version != nil } }

        // Every client's mutations, 4 more each round without waiting for answers (all of them may be
        // in flight), while connections are cut: at random, and surely in rounds 2 and 7.
        var tasks: [[Task<Outcome, any Error>]] = names.map { _ in [] }
        var drops = 0
        for round in 0..<10 {
            for (client, mutator) in mutators.enumerated() {
                for index in (round * 4)..<(round * 4 + 4) {
                    tasks[client].append(Self.send(operations[client], index, client: names[client], by: mutator, showingIn: lists[client].remote))
                }
            }
            try await Task.sleep(for: .milliseconds(Int(5 + random.next(upTo: 40))))
            if random.next(upTo: 2) == 0 || round == 2 || round == 7 { drops += transport.drop() }
            if round == 5 {
                // The server goes away with mutations in flight, and comes back.
                try await Task.sleep(for: .milliseconds(50))
                fixture = try await fixture.restart(mutations: Self.mutations)
            }
        }
        var outcomes: [[Outcome]] = []
        for clientTasks in tasks {
            var answered: [Outcome] = []
            for task in clientTasks { answered.append(try await task.value) }
            outcomes.append(answered)
        }
        if let script {
            let report = try await script.report(seconds: 90)
            let (ops, answered) = try JSClient.parse(report)
            var serial = Serial()
            for (operation, outcome) in zip(ops, answered).sorted(by: { $0.1.id < $1.1.id }) { serial.apply(operation, id: outcome.id) }
            #expect(answered.map(\.id) == Array(1...40), "seed \(seed), js: numbers")
            #expect(Set(answered.filter(\.refused).map(\.id)) == serial.refusals, "seed \(seed), js: refusals")
            let (tally, steps, notes) = try fixture.pool.read { db in
                (try Int64.fetchOne(db, sql: "SELECT value FROM tally WHERE client = 'js-c3'"),
                 try Int64.fetchAll(db, sql: "SELECT k FROM step_log WHERE client = 'js-c3' ORDER BY id"),
                 try Row.fetchAll(db, sql: "SELECT day, folder FROM message WHERE sender = 'js-c3' ORDER BY id"))
            }
            #expect(tally == serial.tally && steps == serial.steps, "seed \(seed), js: steps once each, in order")
            #expect(notes.map { $0["day"] as Int64 } == serial.notes.map(\.day), "seed \(seed), js: notes")
            #expect(notes.map { ($0["folder"] as String) == "archive" } == serial.notes.map(\.archived), "seed \(seed), js: archived")
            #expect(report["shownTwice"] as? Int == 0, "seed \(seed), js: a row shown twice")
            #expect(report["pendingCount"] as? Int == 0, "\(report["pendingKeys"] ?? "")")
            print("mutation oracle seed \(seed): js client \(report["cuts"] ?? "?") cuts, \(report["pendingSeen"] ?? "?") pending rows seen")
        }
        let resent = outcomes.joined().filter(\.duplicate).count
        print("mutation oracle seed \(seed): \(drops) connections cut, a restart, \(resent) answered as sent again")
        #expect(drops > 0, "connections were cut")

        for (client, name) in names.enumerated() {
            // Each call got a number of its own, 1…40 with no gap, and every mutation was answered.
            let ids = outcomes[client].map(\.id)
            #expect(ids.sorted() == Array(1...40), "seed \(seed), \(name): numbers \(ids)")
            #expect(mutators[client].pendingCount == 0)
            // The serial application of the calls in number order.
            var serial = Serial()
            for (operation, outcome) in zip(operations[client], outcomes[client]).sorted(by: { $0.1.id < $1.1.id }) {
                serial.apply(operation, id: outcome.id)
            }
            let refused = Set(outcomes[client].filter(\.refused).map(\.id))
            #expect(refused == serial.refusals, "seed \(seed), \(name): refusals \(refused.sorted()) vs \(serial.refusals.sorted())")
            let (tally, steps, notes, last) = try fixture.pool.read { db in
                (try Int64.fetchOne(db, sql: "SELECT value FROM tally WHERE client = ?", arguments: [name]),
                 try Int64.fetchAll(db, sql: "SELECT k FROM step_log WHERE client = ? ORDER BY id", arguments: [name]),
                 try Row.fetchAll(db, sql: "SELECT day, folder FROM message WHERE sender = ? ORDER BY id", arguments: [name]),
                 try Int64.fetchOne(db, sql: "SELECT last_id FROM livelist_mutation_client WHERE client = ?", arguments: [name]))
            }
            #expect(tally == serial.tally, "seed \(seed), \(name): tally")
            #expect(steps == serial.steps, "seed \(seed), \(name): steps applied once each, in order")
            let held = notes.map { (day: $0["day"] as Int64, archived: ($0["folder"] as String) == "archive") }
            #expect(held.map(\.day) == serial.notes.map(\.day), "seed \(seed), \(name): one note per note call, in order")
            #expect(held.map(\.archived) == serial.notes.map(\.archived), "seed \(seed), \(name): archived")
            #expect(last == 40)
        }
        // Every list, through the cuts and the restart, equals the SELECT; no pending row stood
        // beside its server row, and none became it by a delete and an insert.
        try await eventually("every list equals the SELECT", seconds: 20) { try lists.allSatisfy { $0.client.matches(try fixture.select()) } }
        let pendingShown = lists.map(\.pendingRowsShown)
        print("mutation oracle seed \(seed): pending rows shown \(pendingShown)")
        for list in lists {
            #expect(list.remote.pendingChangesCount == 0)
            #expect(list.shownTwice.isEmpty, "seed \(seed): \(list.shownTwice)")
            #expect(list.deletedAndInserted.isEmpty, "seed \(seed): \(list.deletedAndInserted)")
        }
        #expect(pendingShown.reduce(0, +) > 0)
        for mutator in mutators { mutator.stop() }
        for list in lists { list.remote.stop() }
        await fixture.stop()
    }
}

/// The oracle's client in node (`Tests/Web/oracle-client.mjs`): livelist.js's `Mutator` and
/// `LiveQuery` with pending rows; absent when node is not installed.
final class JSClient: @unchecked Sendable {
    // `@unchecked Sendable`: `process` and `output` are only used by the test that started it.
    let process: Process
    let output: Pipe

    static var node: String? {
        for directory in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin").split(separator: ":") {
            let path = "\(directory)/node"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }

    static func start(url: String, client: String, seed: UInt64, count: Int, index: Int) -> JSClient? {
        guard let node else { return nil }
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: node)
        process.arguments = ["--experimental-websocket", root.appendingPathComponent("Tests/Web/oracle-client.mjs").path,
                             url, client, "\(seed)", "\(count)", "\(index)"]
        let output = Pipe()
        process.standardOutput = output
        do {
            try process.run()
        } catch {
            Issue.record("node did not start: \(error)")
            return nil
        }
        return JSClient(process: process, output: output)
    }

    private init(process: Process, output: Pipe) {
        self.process = process
        self.output = output
    }

    /// The script's report, once it exits (within `seconds`).
    func report(seconds: Double) async throws -> [String: Any] {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while process.isRunning {
            guard ContinuousClock.now < deadline else {
                process.terminate()
                throw TimeLimitExceeded(what: "the node client")
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let line = String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
        guard process.terminationStatus == 0, let report = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
            throw NodeFailed(status: process.terminationStatus, output: line)
        }
        return report
    }

    /// The operations and outcomes of a report, as the oracle's.
    static func parse(_ report: [String: Any]) throws -> ([MutationOracleTests.Operation], [MutationOracleTests.Outcome]) {
        guard let operations = report["operations"] as? [[String: Any]], let outcomes = report["outcomes"] as? [[String: Any]] else {
            throw NodeFailed(status: 0, output: "\(report)")
        }
        let ops: [MutationOracleTests.Operation] = try operations.map { operation in
            if let k = operation["step"] as? Int { return .step(Int64(k)) }
            if let k = operation["archive"] as? Int { return .archive(Int64(k)) }
            if let note = operation["note"] as? [Any], note.count == 3, let id = note[0] as? Int, let day = note[1] as? Int, let subject = note[2] as? String {
                return .note(Int64(id), Int64(day), subject)
            }
            throw NodeFailed(status: 0, output: "\(operation)")
        }
        let answered: [MutationOracleTests.Outcome] = try outcomes.map { outcome in
            guard let id = outcome["id"] as? Int, let refused = outcome["refused"] as? Bool else { throw NodeFailed(status: 0, output: "\(outcome)") }
            return MutationOracleTests.Outcome(id: Int64(id), refused: refused, duplicate: outcome["duplicate"] as? Bool ?? false)
        }
        return (ops, answered)
    }

    struct NodeFailed: Error, CustomStringConvertible {
        var status: Int32
        var output: String
        var description: String { "the node client failed (\(status)): \(output)" }
    }
}
