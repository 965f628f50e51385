import GRDB
import Testing
@testable import LiveQuery
@testable import LiveQueryCore

/// The tokenizer and the SELECT parser, case by case: what they read of a statement SQLite has
/// already accepted, and which shapes they leave to a refetch.
struct SelectParserTests {
    typealias Kind = SQLToken.Kind
    typealias Shape = RefetchReason.Shape

    /// The aggregates these tests call, as SQLite registers them: `min` and `max` are also scalar
    /// functions of any number of arguments.
    static let functions: SQLFunctions = {
        var functions = SQLFunctions(aggregates: ["count", "sum", "avg", "total", "group_concat", "json_group_array", "row_number"])
        for name in ["min", "max"] {
            functions.variants[name] = [.init(isAggregate: false, argumentCount: -1, isDeterministic: true),
                                        .init(isAggregate: true, argumentCount: 1, isDeterministic: true)]
        }
        return functions
    }()

    /// The functions of a fresh connection, as its SQLite reports them.
    static func sqliteFunctions() throws -> SQLFunctions {
        try DatabaseQueue().read { db in try SQLFunctions.read(db) }
    }

    static func parse(_ sql: String, functions: SQLFunctions = Self.functions) -> ParsedSelect {
        ParsedSelect(sql, functions: functions)
    }

    static func kindsAndTexts(_ sql: String) -> [(Kind, String)]? {
        SQLTokenizer.tokens(sql).map { tokens in tokens.map { ($0.kind, $0.text) } }
    }

    static func expectTokens(_ sql: String, _ expected: [(Kind, String)], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let tokens = kindsAndTexts(sql) else {
            Issue.record("\(sql) did not tokenize", sourceLocation: sourceLocation)
            return
        }
        #expect(tokens.map(\.0) == expected.map(\.0), "\(sql)", sourceLocation: sourceLocation)
        #expect(tokens.map(\.1) == expected.map(\.1), "\(sql)", sourceLocation: sourceLocation)
    }

    // MARK: - Tokens

    @Test("quoting: one token per literal or quoted identifier; identifiers unquoted with their doubled quotes undone, literals as written", arguments: [
        ("'it''s'", [(Kind.string, "'it''s'")]),
        ("''", [(.string, "''")]),
        ("\"a \"\"b\"\"\"", [(.identifier(quoted: true), "a \"b\"")]),
        ("[a b]", [(.identifier(quoted: true), "a b")]),
        ("[a\"b]", [(.identifier(quoted: true), "a\"b")]),
        ("`a``b`", [(.identifier(quoted: true), "a`b")]),
        ("\"order\" [group] `select`", [(.identifier(quoted: true), "order"), (.identifier(quoted: true), "group"), (.identifier(quoted: true), "select")]),
        ("\"two words\".\"x.y\"", [(.identifier(quoted: true), "two words"), (.symbol, "."), (.identifier(quoted: true), "x.y")]),
        ("été 名前 \"名前\"", [(.identifier(quoted: false), "été"), (.identifier(quoted: false), "名前"), (.identifier(quoted: true), "名前")]),
        ("a$b _x", [(.identifier(quoted: false), "a$b"), (.identifier(quoted: false), "_x")]),
        ("x'0aFF' X'00'", [(.blob, "x'0aFF'"), (.blob, "X'00'")]),
        ("x y'z'", [(.identifier(quoted: false), "x"), (.identifier(quoted: false), "y"), (.string, "'z'")]),
        ("? ?12 :name @name $name", [(.parameter, "?"), (.parameter, "?12"), (.parameter, ":name"), (.parameter, "@name"), (.parameter, "$name")]),
        ("12 1.5 .5 1e-3 2E+4 0x1F", [(.number, "12"), (.number, "1.5"), (.number, ".5"), (.number, "1e-3"), (.number, "2E+4"), (.number, "0x1F")]),
        ("a||b<=c<>d!=e==f->g->>h", [
            (.identifier(quoted: false), "a"), (.symbol, "||"), (.identifier(quoted: false), "b"), (.symbol, "<="), (.identifier(quoted: false), "c"),
            (.symbol, "<>"), (.identifier(quoted: false), "d"), (.symbol, "!="), (.identifier(quoted: false), "e"), (.symbol, "=="),
            (.identifier(quoted: false), "f"), (.symbol, "->"), (.identifier(quoted: false), "g"), (.symbol, "->>"), (.identifier(quoted: false), "h"),
        ]),
        ("'a -- b' \"/* c */\"", [(.string, "'a -- b'"), (.identifier(quoted: true), "/* c */")]),
    ])
    func quoting(sql: String, expected: [(Kind, String)]) {
        Self.expectTokens(sql, expected)
    }

    @Test("comments: dropped between tokens, split a word they sit in, run to the end of the input when not closed; not nested", arguments: [
        ("a -- c\nb", ["a", "b"]),
        ("a -- c", ["a"]),
        ("a/* c */b", ["a", "b"]),
        ("SEL/**/ECT", ["SEL", "ECT"]),
        ("a /* c * / d */ b", ["a", "b"]),
        ("a /* never closed", ["a"]),
        ("a /*", ["a"]),
        ("a /* x /* y */ b */", ["a", "b", "*", "/"]),
        ("a - -b", ["a", "-", "-", "b"]),
        ("a/b", ["a", "/", "b"]),
        ("-- only a comment", []),
    ])
    func comments(sql: String, expected: [String]) {
        #expect(Self.kindsAndTexts(sql)?.map(\.1) == expected, "\(sql)")
    }

    @Test("an unterminated literal or quoted identifier makes the SQL unreadable", arguments: [
        "'abc", "'it''s", "\"abc", "`abc", "[abc", "x'00", "SELECT a FROM t WHERE b = 'x",
    ])
    func unterminated(sql: String) {
        #expect(SQLTokenizer.tokens(sql) == nil, "\(sql)")
        #expect(Self.parse(sql).refetchReasons == [.unreadableSQL])
    }

    @Test("a token's range is its place in the source's UTF-8, quotes included")
    func ranges() throws {
        let sql = "SELECT été, \"名\" FROM [t] -- end"
        let tokens = try #require(SQLTokenizer.tokens(sql))
        let bytes = Array(sql.utf8)
        let sources = tokens.map { String(decoding: bytes[$0.range], as: UTF8.self) }
        #expect(sources == ["SELECT", "été", ",", "\"名\"", "FROM", "[t]"])
    }

    @Test("keywords match bare words in any case, never quoted ones")
    func keywords() throws {
        let tokens = try #require(SQLTokenizer.tokens("order \"order\" OrDeR [order]"))
        #expect(tokens.map { $0.isKeyword("ORDER") } == [true, false, true, false])
    }

    @Test("function calls: names, bare or quoted, followed by an opening parenthesis, lower-cased, and the bare current-time keywords", arguments: [
        ("random() + ABS(x) - count(*)", ["random", "abs", "count"] as Set<String>),
        ("random /* c */ ()", ["random"]),
        ("\"random\"() + [Abs](x) + `changes`()", ["random", "abs", "changes"]),
        ("\"current_timestamp\" || a [(]", []),
        ("CURRENT_TIMESTAMP > current_date AND Current_Time", ["current_timestamp", "current_date", "current_time"]),
        ("'random()' || \"random\" || x", []),
        ("date('now', ?)", ["date"]),
    ] as [(String, Set<String>)])
    func functionCalls(sql: String, expected: Set<String>) throws {
        let tokens = try #require(SQLTokenizer.tokens(sql))
        #expect(SQLTokenizer.functionCalls(tokens) == expected, "\(sql)")
    }

    // MARK: - Shapes the parser leaves to a refetch

    @Test("each shape the parser cannot maintain names its reason", arguments: [
        ("", [Shape.emptySQL]),
        ("  -- nothing but a comment\n", [.emptySQL]),
        ("SELECT a FROM t WHERE b = 'open", [.unreadableSQL]),
        ("WITH recent AS (SELECT * FROM t) SELECT * FROM recent ORDER BY a", [.commonTableExpression]),
        ("with recursive n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT x FROM n", [.commonTableExpression]),
        ("VALUES (1), (2)", [.notPlainSelect]),
        ("PRAGMA table_info(t)", [.notPlainSelect]),
        ("SELECT a FROM t UNION SELECT a FROM u", [.compoundSelect]),
        ("SELECT a FROM t UNION ALL SELECT a FROM u ORDER BY a", [.compoundSelect]),
        ("SELECT a FROM t INTERSECT SELECT a FROM u", [.compoundSelect]),
        ("SELECT a FROM t EXCEPT SELECT a FROM u", [.compoundSelect]),
        ("SELECT 1 UNION VALUES (2)", [.compoundSelect, .values, .noFrom]),
        ("SELECT a FROM t GROUP BY a", [.groupBy]),
        ("SELECT a FROM t GROUP BY a HAVING a > 1", [.groupBy, .having]),
        ("SELECT a, row_number() OVER (ORDER BY a) FROM t", [.windowFunction]),
        ("SELECT a FROM t ORDER BY row_number() OVER (ORDER BY a)", [.windowFunction]),
        ("SELECT a, row_number() OVER w FROM t WINDOW w AS (ORDER BY a)", [.windowFunction]),
        ("SELECT count(*), sum(a) OVER (PARTITION BY b) FROM t", [.windowFunction]),
        ("SELECT a FROM t WINDOW w AS (ORDER BY a) ORDER BY row_number() OVER w", [.windowFunction]),
        ("SELECT count(*) FROM t", [.aggregate("count")]),
        ("SELECT COUNT(DISTINCT a) FROM t", [.aggregate("count")]),
        ("SELECT avg(a), sum(b) FROM t", [.aggregate("avg")]),
        ("SELECT total(a) FROM t", [.aggregate("total")]),
        ("SELECT group_concat(a, ',') FROM t", [.aggregate("group_concat")]),
        ("SELECT json_group_array(a) FROM t", [.aggregate("json_group_array")]),
        ("SELECT \"count\"(*) FROM t", [.aggregate("count")]),
        ("SELECT a, [Sum](b) FROM t", [.aggregate("sum")]),
        ("SELECT a, (SELECT count(*) FROM u) AS n FROM t", [.aggregate("count")]),
        ("SELECT a FROM t LIMIT 10", [.limit]),
        ("SELECT a FROM t ORDER BY a LIMIT 10 OFFSET 5", [.limit]),
        ("SELECT DISTINCT a FROM t", [.distinct]),
        ("SELECT 1", [.noFrom]),
        ("SELECT 1 WHERE 1", [.noFrom]),
        ("SELECT * FROM (SELECT * FROM t)", [.subqueryInFrom]),
        ("SELECT * FROM (t JOIN u ON u.id = t.u_id)", [.subqueryInFrom]),
        ("SELECT * FROM 't'", [.unreadableFrom]),
        ("SELECT * FROM aux.t", [.otherSchema("aux")]),
        ("SELECT * FROM temp.t", [.otherSchema("temp")]),
        ("SELECT * FROM t JOIN aux.u ON u.id = t.u_id", [.otherSchema("aux")]),
        ("SELECT * FROM json_each('[1, 2]')", [.tableValuedFunction("json_each")]),
        ("SELECT * FROM t JOIN generate_series(1, 3) AS g ON g.value = t.a", [.tableValuedFunction("generate_series")]),
        ("SELECT * FROM t JOIN u USING (id)", [.joinUsing]),
        ("SELECT * FROM t JOIN u", [.joinWithoutOn]),
        ("SELECT * FROM t LEFT JOIN u WHERE u.id = t.u_id", [.joinWithoutOn]),
        ("SELECT * FROM t, u WHERE u.id = t.u_id", [.commaJoin]),
        ("SELECT * FROM t CROSS JOIN u", [.joinKind("CROSS")]),
        ("SELECT * FROM t natural join u", [.joinKind("NATURAL")]),
        ("SELECT * FROM t RIGHT JOIN u ON u.id = t.u_id", [.joinKind("RIGHT")]),
        ("SELECT * FROM t FULL OUTER JOIN u ON u.id = t.u_id", [.joinKind("FULL")]),
        ("SELECT * FROM t ORDER", [.unreadableOrderBy]),
        ("SELECT * FROM t ORDER BY a + 1", [.orderByExpression("a + 1")]),
        ("SELECT * FROM t ORDER BY lower(a) DESC", [.orderByExpression("lower(a)")]),
        ("SELECT * FROM t ORDER BY 1", [.orderByExpression("1")]),
        ("SELECT * FROM t ORDER BY a, b COLLATE NOCASE || c", [.orderByExpression("b COLLATE NOCASE || c")]),
    ])
    func refetchShapes(sql: String, expected: [Shape]) throws {
        #expect(Self.parse(sql).refetchReasons == expected, "\(sql)")
        #expect(Self.parse(sql, functions: try Self.sqliteFunctions()).refetchReasons == expected, "\(sql), SQLite's own functions")
    }

    @Test("statements that write — the spellings of REPLACE and upsert included — are not plain SELECTs", arguments: [
        "INSERT OR REPLACE INTO t(a) VALUES (1)",
        "REPLACE INTO t(a) VALUES (1)",
        "replace into t(a) values (1)",
        "INSERT INTO t(a) VALUES (1) ON CONFLICT (a) DO UPDATE SET b = excluded.b",
        "INSERT INTO t(a) SELECT a FROM u WHERE true ON CONFLICT DO NOTHING",
        "UPDATE OR REPLACE t SET a = 1",
        "DELETE FROM t",
    ])
    func writesAreNotSelects(sql: String) {
        #expect(Self.parse(sql).refetchReasons == [.notPlainSelect], "\(sql)")
    }

    @Test("the REPLACE and upsert keywords are plain words to the tokenizer")
    func replaceTokens() throws {
        Self.expectTokens("INSERT OR REPLACE INTO t VALUES (?) ON CONFLICT(a) DO UPDATE SET b = excluded.b", [
            (.identifier(quoted: false), "INSERT"), (.identifier(quoted: false), "OR"), (.identifier(quoted: false), "REPLACE"),
            (.identifier(quoted: false), "INTO"), (.identifier(quoted: false), "t"), (.identifier(quoted: false), "VALUES"),
            (.symbol, "("), (.parameter, "?"), (.symbol, ")"), (.identifier(quoted: false), "ON"), (.identifier(quoted: false), "CONFLICT"),
            (.symbol, "("), (.identifier(quoted: false), "a"), (.symbol, ")"), (.identifier(quoted: false), "DO"),
            (.identifier(quoted: false), "UPDATE"), (.identifier(quoted: false), "SET"), (.identifier(quoted: false), "b"), (.symbol, "="),
            (.identifier(quoted: false), "excluded"), (.symbol, "."), (.identifier(quoted: false), "b"),
        ])
    }

    @Test("min() and max() aggregate with one argument and compare with several — as SQLite reports them, and as the tests' list has them", arguments: [
        ("SELECT max(a) FROM t", [Shape.aggregate("max")]),
        ("SELECT MIN(a) FROM t", [.aggregate("min")]),
        ("SELECT max(min(a, b)) FROM t", [.aggregate("max")]),
        ("SELECT min(a) FILTER (WHERE a > 0) FROM t", [.aggregate("min")]),
        ("SELECT max(a, b) AS m FROM t", []),
        ("SELECT min(a, (b), coalesce(c, 0)) AS m FROM t", []),
        ("SELECT max((a), b) AS m FROM t", []),
        ("SELECT max(a, max(b, c)) AS m FROM t", []),
    ])
    func minAndMax(sql: String, expected: [Shape]) throws {
        #expect(Self.parse(sql).refetchReasons == expected, "\(sql)")
        #expect(Self.parse(sql, functions: try Self.sqliteFunctions()).refetchReasons == expected, "\(sql), SQLite's own functions")
    }

    @Test("what aggregates is what the connection says: a name unknown to it does not, one it knows does, by its argument count", arguments: [
        ("SELECT mine(a) FROM t", SQLFunctions(aggregates: []), [Shape]()),
        ("SELECT mine(a) FROM t", SQLFunctions(aggregates: ["mine"]), [.aggregate("mine")]),
        ("SELECT MINE(a, b) FROM t", SQLFunctions(aggregates: ["mine"]), [.aggregate("mine")]),
        ("SELECT count(*) FROM t", SQLFunctions(aggregates: ["avg"]), []),
        // A scalar of two arguments beside an aggregate of any number: SQLite picks the exact one.
        ("SELECT f(a, b) FROM t", SQLFunctions(variants: ["f": [.init(isAggregate: false, argumentCount: 2, isDeterministic: true),
                                                                  .init(isAggregate: true, argumentCount: -1, isDeterministic: true)]]), []),
        ("SELECT f(a) FROM t", SQLFunctions(variants: ["f": [.init(isAggregate: false, argumentCount: 2, isDeterministic: true),
                                                               .init(isAggregate: true, argumentCount: -1, isDeterministic: true)]]), [.aggregate("f")]),
        // count(*) passes no argument; an ORDER BY inside the call separates none.
        ("SELECT count(*) FROM t", SQLFunctions(variants: ["count": [.init(isAggregate: true, argumentCount: 0, isDeterministic: true)]]), [.aggregate("count")]),
        ("SELECT count() FROM t", SQLFunctions(variants: ["count": [.init(isAggregate: true, argumentCount: 0, isDeterministic: true)]]), [.aggregate("count")]),
        ("SELECT group_concat(a, ',' ORDER BY b, c) FROM t",
         SQLFunctions(variants: ["group_concat": [.init(isAggregate: true, argumentCount: 2, isDeterministic: true)]]), [.aggregate("group_concat")]),
    ] as [(String, SQLFunctions, [Shape])])
    func connectionFunctions(sql: String, functions: SQLFunctions, expected: [Shape]) {
        #expect(Self.parse(sql, functions: functions).refetchReasons == expected, "\(sql)")
    }

    /// A product of integers, registered by the app.
    struct Product: DatabaseAggregate {
        var value: Int64 = 1
        mutating func step(_ dbValues: [DatabaseValue]) { value *= Int64.fromDatabaseValue(dbValues[0]) ?? 1 }
        func finalize() -> (any DatabaseValueConvertible)? { value }
    }

    @Test("the nondeterministic functions are the scalar ones SQLite does not flag deterministic, the app's own included; never an aggregate")
    func nondeterministicScalars() throws {
        let queue = try DatabaseQueue()
        let functions = try queue.write { db in
            db.add(function: DatabaseFunction("product", argumentCount: 1, pure: false, aggregate: Product.self))
            db.add(function: DatabaseFunction("jitter", argumentCount: 0, pure: false) { _ in 0 })
            db.add(function: DatabaseFunction("twice", argumentCount: 1, pure: true) { values in (Int64.fromDatabaseValue(values[0]) ?? 0) * 2 })
            return try SQLFunctions.read(db)
        }
        let flagged = functions.nondeterministicScalars
        for name in ["random", "randomblob", "changes", "total_changes", "last_insert_rowid", "current_timestamp", "jitter"] {
            #expect(flagged.contains(name), "\(name)")
        }
        for name in ["avg", "count", "min", "max", "sum", "group_concat", "row_number", "product", "abs", "lower", "date", "twice"] {
            #expect(!flagged.contains(name), "\(name)")
        }
        #expect(functions.isAggregate("product", argumentCount: 1))
        #expect(!functions.isAggregate("twice", argumentCount: 1))
    }

    @Test("an aggregate the app registers through GRDB is an aggregate: the query is refetched, never maintained row by row", arguments: [true, false])
    func registeredAggregate(pure: Bool) async throws {
        let queue = try DatabaseQueue()
        try await queue.write { db in
            db.add(function: DatabaseFunction("product", argumentCount: 1, pure: pure, aggregate: Product.self))
            try db.execute(sql: "CREATE TABLE item(id INTEGER PRIMARY KEY, score INTEGER); INSERT INTO item(score) VALUES (2), (3)")
        }
        let request = LiveQueryRequest(sql: "SELECT id, product(score) AS p FROM item ORDER BY id")
        let explanation = try await LiveQuery.explain(request, in: queue)
        #expect(explanation.path == .refetch(reason: .request([.aggregate("product")])))
        #expect(try await queue.read { db in try Int64.fetchOne(db, sql: "SELECT product(score) FROM item") } == 6)
    }

    // MARK: - What the incremental path reads

    @Test("tables: a name, an alias with or without AS, main. dropped, index hints kept, keywords quoted as names")
    func tables() {
        let cases: [(sql: String, name: String, alias: String?, hint: Bool, end: String)] = [
            ("SELECT * FROM track", "track", nil, false, "SELECT * FROM track"),
            ("SELECT * FROM track AS t WHERE 1", "track", "t", false, "SELECT * FROM track AS t"),
            ("SELECT * FROM track t ORDER BY t.a", "track", "t", false, "SELECT * FROM track t"),
            ("SELECT * FROM main.track", "track", nil, false, "SELECT * FROM main.track"),
            ("SELECT * FROM \"main\".\"track\"", "track", nil, false, "SELECT * FROM \"main\".\"track\""),
            ("SELECT * FROM track INDEXED BY track_name", "track", nil, true, "SELECT * FROM track"),
            ("SELECT * FROM track AS t NOT INDEXED WHERE 1", "track", "t", true, "SELECT * FROM track AS t"),
            ("SELECT * FROM [group] AS \"order\"", "group", "order", false, "SELECT * FROM [group] AS \"order\""),
            ("SELECT * FROM `select`", "select", nil, false, "SELECT * FROM `select`"),
            ("SELECT key FROM replace ORDER BY key", "replace", nil, false, "SELECT key FROM replace"),
            ("SELECT * FROM \"my table\" \"my alias\"", "my table", "my alias", false, "SELECT * FROM \"my table\" \"my alias\""),
            ("SELECT * FROM tëst AS ünïcode", "tëst", "ünïcode", false, "SELECT * FROM tëst AS ünïcode"),
        ]
        for (sql, name, alias, hint, end) in cases {
            let parsed = Self.parse(sql)
            #expect(parsed.refetchReasons.isEmpty, "\(sql): \(parsed.refetchReasons)")
            #expect(parsed.tables.count == 1, "\(sql)")
            guard let table = parsed.tables.first else { continue }
            #expect(table.name == name, "\(sql)")
            #expect(table.alias == alias, "\(sql)")
            #expect(table.visibleName == (alias ?? name), "\(sql)")
            #expect(table.join == .base, "\(sql)")
            #expect(table.hasIndexHint == hint, "\(sql)")
            #expect(table.endOffset == end.utf8.count, "\(sql)")
        }
    }

    @Test("joins: INNER and LEFT, their ON conjuncts split at top-level AND, equalities between two columns found")
    func joins() throws {
        let sql = """
            SELECT * FROM track AS t
            JOIN album ON album.id = t.album_id
            INNER JOIN genre g ON ((g.id == t.genre_id)) AND (g.hidden = 0 AND g.kind = 'x')
            LEFT OUTER JOIN "artist" AS ar ON "ar"."id" = [album].artist_id AND ar.active
            left join main.label ON main.label.id = album.label_id AND label.name = t.name OR 0
            WHERE t.year > 2000
            """
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(parsed.refetchReasons)")
        try #require(parsed.tables.count == 5)
        #expect(parsed.tables.map(\.name) == ["track", "album", "genre", "artist", "label"])
        #expect(parsed.tables.map(\.alias) == ["t", nil, "g", "ar", nil])
        #expect(parsed.tables.map(\.join) == [.base, .inner, .inner, .left, .left])
        #expect(parsed.tables.map(\.conditions) == [
            [],
            ["album.id = t.album_id"],
            ["((g.id == t.genre_id))", "(g.hidden = 0 AND g.kind = 'x')"],
            ["\"ar\".\"id\" = [album].artist_id", "ar.active"],
            ["main.label.id = album.label_id", "label.name = t.name OR 0"],
        ])
        func pairs(_ table: ParsedSelect.TableReference) -> [String] {
            table.equalities.map { "\($0.conjunct): \($0.lhs.qualifier ?? "").\($0.lhs.column) = \($0.rhs.qualifier ?? "").\($0.rhs.column)" }
        }
        #expect(parsed.tables.map(pairs) == [
            [],
            ["0: album.id = t.album_id"],
            ["0: g.id = t.genre_id"],
            ["0: ar.id = album.artist_id"],
            ["0: label.id = album.label_id"],
        ])
        #expect(parsed.whereClause == "t.year > 2000")
        #expect(parsed.order.isEmpty)
    }

    @Test("ORDER BY terms: columns with their collation, direction and NULLS placement", arguments: [
        ("SELECT * FROM t ORDER BY a", [Term(nil, "a")]),
        ("SELECT * FROM t ORDER BY t.a DESC, b ASC", [Term("t", "a", descending: true), Term(nil, "b")]),
        ("SELECT * FROM t ORDER BY a COLLATE NOCASE", [Term(nil, "a", collation: "NOCASE")]),
        ("SELECT * FROM t ORDER BY a COLLATE \"rtrim\" DESC NULLS FIRST", [Term(nil, "a", collation: "rtrim", descending: true, nulls: .first)]),
        ("SELECT * FROM t ORDER BY a NULLS LAST, (b) desc nulls last", [Term(nil, "a", nulls: .last), Term(nil, "b", descending: true, nulls: .last)]),
        ("SELECT * FROM t ORDER BY main.t.a, \"order\", [group] DESC", [Term("t", "a"), Term(nil, "order"), Term(nil, "group", descending: true)]),
        ("SELECT * FROM t WHERE a IN (SELECT b FROM u ORDER BY b DESC) ORDER BY c", [Term(nil, "c")]),
    ])
    func orderTerms(sql: String, expected: [Term]) {
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(sql): \(parsed.refetchReasons)")
        #expect(parsed.order.map(Term.init) == expected, "\(sql)")
    }

    @Test("WHERE is the text between its keyword and the next top-level clause; parentheses and quoted keywords do not end it", arguments: [
        ("SELECT * FROM t WHERE a = 1", "a = 1"),
        ("SELECT * FROM t WHERE a = 1 ORDER BY a", "a = 1"),
        ("SELECT * FROM t WHERE (a IN (SELECT b FROM u WHERE (c > (1)) ORDER BY b)) AND d ORDER BY a", "(a IN (SELECT b FROM u WHERE (c > (1)) ORDER BY b)) AND d"),
        ("SELECT * FROM t WHERE \"order\" > 'ORDER BY' -- ORDER BY x\nORDER BY \"order\"", "\"order\" > 'ORDER BY'"),
        ("SELECT * FROM t WHERE EXISTS (SELECT 1 FROM u GROUP BY x LIMIT 1)", "EXISTS (SELECT 1 FROM u GROUP BY x LIMIT 1)"),
        ("SELECT * FROM t", nil),
    ] as [(String, String?)])
    func whereClause(sql: String, expected: String?) {
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(sql): \(parsed.refetchReasons)")
        #expect(parsed.whereClause == expected, "\(sql)")
    }

    @Test("the FROM clause: its text and its place in the source's UTF-8", arguments: [
        ("SELECT a FROM t", "t"),
        ("SELECT 'é', \"ü\" FROM tëst AS x WHERE 1", "tëst AS x"),
        ("SELECT * FROM t /* c */ JOIN u ON u.id = t.u_id ORDER BY t.a", "t /* c */ JOIN u ON u.id = t.u_id"),
        ("select *\nfrom  t\n", "t"),
    ])
    func fromClause(sql: String, expected: String) {
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(sql): \(parsed.refetchReasons)")
        #expect(parsed.from == expected)
        #expect(String(decoding: Array(sql.utf8)[parsed.fromRange], as: UTF8.self) == expected)
    }

    @Test("result columns: the text after SELECT [ALL], and whether it holds placeholders", arguments: [
        ("SELECT a, b AS \"from\" FROM t", "a, b AS \"from\"", false),
        ("SELECT ALL t.* FROM t", "t.*", false),
        ("SELECT a, ? AS p FROM t", "a, ? AS p", true),
        ("SELECT :name || a FROM t", ":name || a", true),
        ("SELECT a, (SELECT b FROM u WHERE u.id = ?2) FROM t WHERE a = ?1", "a, (SELECT b FROM u WHERE u.id = ?2)", true),
        ("SELECT 'a?', \":b\" FROM t WHERE a = ?", "'a?', \":b\"", false),
        ("SELECT \"order\", [group], `limit` FROM t ORDER BY \"order\"", "\"order\", [group], `limit`", false),
    ])
    func resultColumns(sql: String, expected: String, hasParameters: Bool) {
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(sql): \(parsed.refetchReasons)")
        #expect(parsed.resultColumns == expected)
        #expect(parsed.resultColumnsHaveParameters == hasParameters)
    }

    @Test("column references: name, table.name, schema.table.name, quoted or not; anything else is an expression", arguments: [
        ("name", ParsedSelect.ColumnReference(qualifier: nil, column: "name")),
        ("t.name", .init(qualifier: "t", column: "name")),
        ("main.t.name", .init(qualifier: "t", column: "name")),
        ("\"my table\".[my column]", .init(qualifier: "my table", column: "my column")),
        ("\"order\"", .init(qualifier: nil, column: "order")),
        ("t . name", .init(qualifier: "t", column: "name")),
        ("a + b", nil),
        ("lower(a)", nil),
        ("'a'", nil),
        ("1", nil),
        ("", nil),
        ("t.", nil),
    ] as [(String, ParsedSelect.ColumnReference?)])
    func columnReferences(text: String, expected: ParsedSelect.ColumnReference?) {
        #expect(ParsedSelect.columnReference(text) == expected, "\(text)")
    }

    @Test("a plain SELECT over a join, with keywords as quoted names, reads whole and asks for no refetch")
    func plainSelect() {
        let sql = """
            SELECT "order".id, "order"."group" AS g, c.name -- the customer
            FROM "order" JOIN [customer] AS c ON c.id = "order".customer_id
            WHERE /* paid */ "order".paid AND c.name <> 'FROM'
            ORDER BY "order"."group" COLLATE NOCASE, c.name DESC NULLS LAST
            """
        let parsed = Self.parse(sql)
        #expect(parsed.refetchReasons.isEmpty, "\(parsed.refetchReasons)")
        #expect(parsed.tables.map(\.visibleName) == ["order", "c"])
        #expect(parsed.whereClause == "\"order\".paid AND c.name <> 'FROM'")
        #expect(parsed.order.map(Term.init) == [Term("order", "group", collation: "NOCASE"), Term("c", "name", descending: true, nulls: .last)])
    }

    // MARK: - The REPLACE facts: what makes two rows conflict

    @Test("a unique index's terms and predicate, read from its CREATE INDEX (rows a REPLACE deletes conflict on them)", arguments: [
        ("CREATE UNIQUE INDEX i ON t(a)", ["a"], nil),
        ("CREATE UNIQUE INDEX i ON t(a DESC, b ASC)", ["a", "b"], nil),
        ("CREATE UNIQUE INDEX \"i(x)\" ON \"t(y)\"(lower(a) COLLATE NOCASE, (a + b) DESC) WHERE deleted IS NULL", ["lower(a) COLLATE NOCASE", "(a + b)"], "deleted IS NULL"),
        ("CREATE UNIQUE INDEX i ON t(a /* the key */, b) WHERE b > ')'", ["a", "b"], "b > ')'"),
        ("CREATE UNIQUE INDEX i ON t(a) WHERE b > 0 -- SQLite keeps a trailing comment in the schema", ["a"], "b > 0"),
        ("CREATE UNIQUE INDEX i ON t(a) WHERE b > 0 /* kept too */", ["a"], "b > 0"),
        ("CREATE UNIQUE INDEX i ON t(a) WHERE b > 0 -- a comment\n  AND c < 1", ["a"], "b > 0 -- a comment\n  AND c < 1"),
    ] as [(String, [String], String?)])
    func uniqueIndexTerms(sql: String, terms: [String], predicate: String?) throws {
        let parsed = try #require(TableSchema.parseIndex(sql))
        #expect(parsed.terms == terms, "\(sql)")
        #expect(parsed.predicate == predicate, "\(sql)")
    }
}

extension SelectParserTests {
    /// An ORDER BY term as the parser reads it, comparable.
    struct Term: Equatable, Sendable, CustomStringConvertible {
        var qualifier: String?
        var column: String
        var collation: String?
        var descending: Bool
        var nulls: SortTerm.NullsOrder?

        init(_ qualifier: String?, _ column: String, collation: String? = nil, descending: Bool = false, nulls: SortTerm.NullsOrder? = nil) {
            (self.qualifier, self.column, self.collation, self.descending, self.nulls) = (qualifier, column, collation, descending, nulls)
        }

        init(_ term: ParsedSelect.OrderTerm) {
            self.init(term.column.qualifier, term.column.column, collation: term.collation, descending: term.descending, nulls: term.nulls)
        }

        var description: String {
            (qualifier.map { $0 + "." } ?? "") + column + (collation.map { " COLLATE " + $0 } ?? "") + (descending ? " DESC" : "")
                + (nulls.map { $0 == .first ? " NULLS FIRST" : " NULLS LAST" } ?? "")
        }
    }
}
