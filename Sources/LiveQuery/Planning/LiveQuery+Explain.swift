import GRDB
import LiveQueryCore

extension LiveQuery {
    /// Validates `request` and says how it would be followed, without opening it. Throws what
    /// ``open(_:in:options:callbackQueue:onEvent:)`` would throw for it — an identity whose
    /// values the declared type cannot hold included, so the result's identities are read.
    /// - Complexity: O(n) for a result of n rows: the identities and sort values are read once,
    ///   as the query's first fetch reads them.
    public static func explain(_ request: LiveQueryRequest<ID>, in reader: any DatabaseReader) async throws(LiveQueryError) -> LiveQueryExplanation {
        do {
            return try await reader.read { db in
                let plan = try QueryPlan(request, db)
                var builder = IndexBuilder(layout: plan.layout, canonicalIdentity: SQLiteQueryRunner<ID>.canonicalizer())
                try SQLiteReads(plan: plan, db: db).fetchAll(into: &builder, mayBeLarge: true)
                let index = LiveIndex(builder: builder, identityType: "\(ID.self)")
                if let mismatch = SQLiteQueryRunner<ID>.identityTypeMismatch(in: index) {
                    throw LiveQueryError.invalidRequest(.identityTypeMismatch(
                        identity: plan.identityName ?? "the default identity", found: mismatch.found, examples: mismatch.examples,
                        declared: "\(ID.self)"))
                }
                return LiveQueryExplanation(path: plan.updatePath, notes: plan.notes, sql: plan.fetchSQL)
            }
        } catch {
            throw LiveQueryError.from(error, sql: nil)
        }
    }

    /// Advice about the open query (see ``LiveQueryExplanation/notes``).
    public var notes: [String] { core.summary.notes }
}

extension QueryPlan {
    var updatePath: LiveUpdatePath {
        mode.refetchReason.map { .refetch(reason: $0) } ?? .incremental
    }
}
