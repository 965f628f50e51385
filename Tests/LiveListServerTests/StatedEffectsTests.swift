import LiveListWire
import LiveQueryCore
import NIOConcurrencyHelpers
import Testing
@testable import LiveListServer

/// The mutations' effects a server reads once: kept when read, read again when the schema could
/// not be read (the database away at start).
struct StatedEffectsTests {
    /// An engine whose schema cannot be read the first `failures` times.
    final class Engine: LiveQueryEngine {
        let reads = NIOLockedValueBox(0)
        let failures: Int

        init(failures: Int) { self.failures = failures }

        func open(_ query: PublishedQuery, arguments: [String: WireValue]) async throws -> any ServedLiveQuery {
            throw WireError(sub: nil, code: .queryFailed, message: "no queries")
        }

        func effects(of mutation: PublishedMutation) async -> MutationEffects {
            let read = reads.withLockedValue { reads in
                reads += 1
                return reads
            }
            return read <= failures ? .unstated(.schemaUnreadable("the database is away")) : .stated([])
        }
    }

    static let mutations = ["m": PublishedMutation(name: "m", statements: [.init("DELETE FROM t WHERE id = 1")])]

    @Test("a catalog read whole is kept: the engine is asked once")
    func kept() async {
        let engine = Engine(failures: 0)
        let stated = StatedEffects()
        #expect(await stated.catalog(engine: engine, mutations: Self.mutations) == ["m": .stated([])])
        #expect(await stated.catalog(engine: engine, mutations: Self.mutations) == ["m": .stated([])])
        #expect(engine.reads.withLockedValue { $0 } == 1)
    }

    @Test("a schema that could not be read is read again, and kept once read")
    func readAgain() async {
        let engine = Engine(failures: 1)
        let stated = StatedEffects()
        #expect(await stated.catalog(engine: engine, mutations: Self.mutations) == ["m": .unstated(.schemaUnreadable("the database is away"))])
        #expect(await stated.catalog(engine: engine, mutations: Self.mutations) == ["m": .stated([])])
        #expect(await stated.catalog(engine: engine, mutations: Self.mutations) == ["m": .stated([])])
        #expect(engine.reads.withLockedValue { $0 } == 2)
    }
}
