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
