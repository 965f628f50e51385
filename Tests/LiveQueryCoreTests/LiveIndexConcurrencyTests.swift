import Foundation
import ListDiff
import Testing
@testable import LiveQueryCore

/// The index used from two threads at once. `LiveIndex` is Sendable: each of its methods may be
/// called from any thread, whatever the live query's own serialization; run under
/// ThreadSanitizer (the CI's sanitizer step includes this module's suites).
struct LiveIndexConcurrencyTests {
    /// Runs `bodies` at once, each on a thread of its own (not the cooperative pool's two, so
    /// that they really overlap), and returns once all have finished.
    private static func together(_ bodies: [@Sendable () -> Void]) async {
        let started = Locked(0), finished = Locked(0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            for body in bodies {
                Thread.detachNewThread {
                    started.withLock { $0 += 1 }
                    while started.withLock({ $0 }) < bodies.count {}
                    body()
                    if finished.withLock({ count in
                        count += 1
                        return count
                    }) == bodies.count { continuation.resume() }
                }
            }
        }
    }

    @Test("the rows holding an identity, asked while a new request replaces the layout")
    func otherHoldersWhileTheLayoutIsReplaced() async {
        // ORDER BY v, then the identity (the key's last value, a text) — or, in the other layout,
        // the same order with the rowid as the identity.
        var comparator = SortKeyComparator(terms: [SortTerm("v")], collations: [.binary])
        comparator.rules.append(SortKeyComparator.Rule(descending: false, nullsFirst: true, collation: .binary))
        let byIdentity = ResultLayout(ordering: comparator, identityIsRowid: false, sections: nil, sectionsArePositional: false)
        let byRowid = ResultLayout(ordering: comparator, identityIsRowid: true, sections: nil, sectionsArePositional: false)
        let entries = [("a", 1), ("b", 2), ("c", 3)].map { identity, rowid in
            IndexEntry(key: .multiple([.integer(rowid * 10), .text(identity)]), rowid: Int64(rowid), token: 0)
        }
        let index = LiveIndex(layout: byIdentity, canonicalIdentity: { $0 }, sorted: entries)
        // Rowid 9, re-read with "a": rowid 1 holds that identity when the identity is the text.
        let reread = IndexEntry(key: .multiple([.integer(5), .text("a")]), rowid: 9, token: 0)
        #expect(index.otherHolders(ofIdentitiesOf: [reread], excluding: []) == [1])

        let rounds = 5_000
        let answers = Locked(Set<Set<Int64>>())
        await Self.together([
            {
                // New requests, alternating the layouts (a refetch after the sort changed).
                for round in 0..<rounds {
                    var builder = index.makeBuilder(layout: round.isMultiple(of: 2) ? byRowid : byIdentity)
                    for entry in entries { builder.append(entry) }
                    _ = index.replaceAll(with: builder)
                }
            },
            {
                // Re-reads asking which other rows hold their identities.
                var seen = Set<Set<Int64>>()
                for _ in 0..<rounds { seen.insert(index.otherHolders(ofIdentitiesOf: [reread], excluding: [])) }
                answers.withLock { $0 = seen }
            },
        ])
        // Each answer is one layout's: nothing (by rowid) or rowid 1 (by identity).
        #expect(answers.withLock { $0 }.isSubset(of: [[], [1]]))
    }
}
