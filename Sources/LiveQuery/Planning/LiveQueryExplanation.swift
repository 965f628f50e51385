import GRDB

/// How a request will be followed, said before anything is observed: incrementally or by
/// refetching (and why), with what a developer should know about it.
///
/// ```swift
/// import GRDB
/// import LiveQuery
///
/// func check(_ dbQueue: DatabaseQueue) async throws {
///     let request = LiveQueryRequest(sql: "SELECT * FROM track ORDER BY length(title)")
///     let explanation = try await LiveQuery.explain(request, in: dbQueue)
///     print(explanation)   // refetch (an ORDER BY expression (length(title)))
/// }
/// ```
public struct LiveQueryExplanation: Sendable, CustomStringConvertible {
    /// ``LiveUpdatePath/incremental``, or ``LiveUpdatePath/refetch(reason:)`` with the reason.
    public let path: LiveUpdatePath
    /// Advice, such as an index whose absence makes a joined row's change scan a table.
    public let notes: [String]
    /// The statement that fetches the result.
    public let sql: String

    /// An explanation, as an engine makes it.
    package init(path: LiveUpdatePath, notes: [String], sql: String) {
        self.path = path
        self.notes = notes
        self.sql = sql
    }

    public var description: String {
        ([path.description] + notes.map { "note: \($0)" }).joined(separator: "\n")
    }
}

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
                var builder = _IndexBuilder(layout: plan.layout, canonicalIdentity: _SQLiteQueryRunner<ID>.canonicalizer())
                try _SQLiteReads(plan: plan, db: db).fetchAll(into: &builder, mayBeLarge: true)
                let index = _LiveIndex(builder: builder, identityType: "\(ID.self)")
                if let mismatch = _SQLiteQueryRunner<ID>.identityTypeMismatch(in: index) {
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
