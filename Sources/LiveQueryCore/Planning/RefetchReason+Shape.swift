extension RefetchReason {
    /// A shape of a request that LiveList does not maintain incrementally: SQLite still runs
    /// the query as written, and every commit to a table it reads refetches it.
    public enum Shape: Sendable, Hashable, CustomStringConvertible {
        /// The SQL could not be tokenized (an unterminated literal, for example).
        case unreadableSQL
        /// The SQL is empty.
        case emptySQL
        /// A common table expression (`WITH`).
        case commonTableExpression
        /// Not a plain SELECT.
        case notPlainSelect
        /// UNION, INTERSECT or EXCEPT.
        case compoundSelect
        /// GROUP BY.
        case groupBy
        /// HAVING.
        case having
        /// A window function (`OVER`, `WINDOW`).
        case windowFunction
        /// An aggregate function, named as the SQL calls it.
        case aggregate(String)
        /// LIMIT or OFFSET.
        case limit
        /// A VALUES clause.
        case values
        /// SELECT DISTINCT.
        case distinct
        /// No FROM clause.
        case noFrom
        /// A subquery in FROM.
        case subqueryInFrom
        /// A FROM clause LiveList cannot read.
        case unreadableFrom
        /// A table of another schema (an attached database or `temp`).
        case otherSchema(String)
        /// A table-valued function.
        case tableValuedFunction(String)
        /// A view or a virtual table.
        case viewOrVirtualTable(String)
        /// A join with USING.
        case joinUsing
        /// A join without ON.
        case joinWithoutOn
        /// A comma join.
        case commaJoin
        /// A join of another kind than INNER and LEFT (RIGHT, FULL, NATURAL, CROSS).
        case joinKind(String)
        /// A joined table whose ON clause has no equality between a unique column of it and a
        /// column of an earlier table of the same type: it can meet several of its rows.
        case joinMeetsSeveralRows(String)
        /// LiveList cannot write the statement that finds the rows meeting a joined table's row.
        case joinLookupUnavailable(table: String, message: String)
        /// An ORDER BY LiveList cannot read.
        case unreadableOrderBy
        /// An ORDER BY term that is an expression, as written.
        case orderByExpression(String)
        /// An ORDER BY term that is not a column of the FROM tables.
        case orderByNotColumn(String)
        /// A collation LiveList cannot compare with (registered by the app).
        case customCollation(String)
        /// An ORDER BY column of a type LiveList does not compare itself (PostgreSQL: an array,
        /// a range, a composite, an enum…): the server orders it.
        case orderByType(column: String, type: String)
        /// The base table is WITHOUT ROWID: its changes name no row.
        case withoutRowid(String)
        /// A table whose changes must be matched to rows has no single-column primary key
        /// (PostgreSQL names a changed row by its key).
        case noSingleColumnKey(String)
        /// The base table's columns hide its rowid.
        case hiddenRowid(String)
        /// The query reads one of its tables beyond the rows it joins (a subquery, or a filter
        /// over the table itself): rows it did not touch can change the result.
        case readsOwnTable(String)
        /// A grouped query (GROUP BY the base table's key) whose WHERE reads a table whose rows
        /// it aggregates: a group could enter or leave the result through rows that left it.
        case filterReadsAggregatedTable(String)
        /// LiveList could not tell which tables the query's expressions read.
        case unknownReads(message: String)
        /// Scalar functions SQLite does not flag deterministic, such as `random()` and `changes()`
        /// (aggregates are decided by the rows they read; the current time is ``currentTime``).
        case nondeterministicFunctions([String])
        /// Date functions given `'now'`, or CURRENT_TIME and its kin: refetched on commits, not as
        /// time passes.
        case currentTime

        public var description: String {
            switch self {
            case .unreadableSQL: "the SQL could not be read"
            case .emptySQL: "the SQL is empty"
            case .commonTableExpression: "a common table expression (WITH)"
            case .notPlainSelect: "not a plain SELECT"
            case .compoundSelect: "a compound SELECT"
            case .groupBy: "GROUP BY"
            case .having: "HAVING"
            case .windowFunction: "a window function"
            case let .aggregate(name): "an aggregate function (\(name))"
            case .limit: "LIMIT/OFFSET"
            case .values: "VALUES"
            case .distinct: "DISTINCT"
            case .noFrom: "no FROM clause"
            case .subqueryInFrom: "a subquery in FROM"
            case .unreadableFrom: "a FROM clause LiveList cannot read"
            case let .otherSchema(name): "a table of another schema (\(name))"
            case let .tableValuedFunction(name): "a table-valued function (\(name))"
            case let .viewOrVirtualTable(name): "\(name) is a view or a virtual table"
            case .joinUsing: "a join with USING"
            case .joinWithoutOn: "a join without ON"
            case .commaJoin: "a comma join"
            case let .joinKind(kind): "a \(kind) join"
            case let .joinMeetsSeveralRows(table):
                "the join with \(table) can meet several of its rows: its ON clause has no equality between a unique column of \(table) and a column of an earlier table, of the same type"
            case let .joinLookupUnavailable(table, message): "LiveList cannot look up the rows that meet \(table): \(message)"
            case .unreadableOrderBy: "an ORDER BY LiveList cannot read"
            case let .orderByExpression(sql): "an ORDER BY expression (\(sql))"
            case let .orderByNotColumn(term): "ORDER BY \(term) is not a column LiveList can compare"
            case let .customCollation(name): "custom collation \(name)"
            case let .orderByType(column, type): "ORDER BY \(column), of type \(type)"
            case let .withoutRowid(table): "\(table) is a WITHOUT ROWID table: its changes carry no row"
            case let .noSingleColumnKey(table): "\(table) has no single-column primary key to match its changes to rows by"
            case let .hiddenRowid(table): "the columns of \(table) hide its rowid"
            case let .readsOwnTable(table): "the query reads \(table) beyond the rows it joins, so rows it did not touch can enter or leave"
            case let .filterReadsAggregatedTable(table):
                "the WHERE clause reads \(table), whose rows the groups aggregate, so a group can enter or leave through rows that left it"
            case let .unknownReads(message): "LiveList could not tell which tables the query's expressions read (\(message))"
            case let .nondeterministicFunctions(names): "the query calls \(names.joined(separator: ", ")), which can change without a write"
            case .currentTime: "the query depends on the current time: it is refetched on commits to the tables it reads, not as time passes"
            }
        }
    }
}
