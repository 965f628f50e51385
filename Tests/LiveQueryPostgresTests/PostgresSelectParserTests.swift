import LiveQueryCore
@testable import LiveQueryPostgres
import Testing

/// Reading PostgreSQL SELECTs without a server: the tables, joins, filter and sort terms a live
/// query needs, and every shape that keeps it from following the SELECT row by row.
@Suite struct PostgresSelectParserTests {
    @Test("the tokenizer reads PostgreSQL's lexical structure: quoted names, strings, dollar quotes, nested comments, parameters, casts")
    func tokens() throws {
        let tokens = try PostgresSQLTokenizer.tokens(#"""
            SELECT "Weird ""Name""", E'it\'s', 'a''b', $tag$ x $ y $tag$, $$q$$, $12, x::int, /* a /* nested */ comment */ -- line
            1.5e-3 FROM Tbl
            """#)
        let kinds = tokens.map(\.kind)
        #expect(kinds.first == .identifier(name: "select", quoted: false))
        #expect(kinds.contains(.identifier(name: "Weird \"Name\"", quoted: true)))
        #expect(kinds.filter { $0 == .string }.count == 4)
        #expect(kinds.contains(.parameter(12)))
        #expect(kinds.contains(.op("::")))
        #expect(kinds.contains(.number))
        #expect(kinds.last == .identifier(name: "tbl", quoted: false))
        for bad in ["SELECT 'open", "SELECT \"open", "SELECT /* open", "SELECT $tag$ open", "SELECT \"\"", "SELECT U&'x'"] {
            #expect(throws: PostgresSQLUnreadable.self, "\(bad)") { try PostgresSQLTokenizer.tokens(bad) }
        }
    }

    @Test("a SELECT with many-to-one joins, a filter and column sort terms is read into its parts")
    func joins() {
        let parsed = PostgresSelectParser.parse("""
            SELECT m.id, m.subject AS title, c.name sender, count_words(m.body)
            FROM public.message AS m
            JOIN contact c ON c.id = m.contact_id
            LEFT OUTER JOIN company co ON (m.kind = 'x') AND co.id = c.company_id
            WHERE m.folder = $1 AND m.received BETWEEN $2 AND $3
            ORDER BY c.name COLLATE "C" DESC NULLS LAST, m.received, "M"."X";
            """)
        #expect(parsed.shapes.isEmpty)
        #expect(parsed.base == PostgresParsedSelect.TableReference(parts: ["public", "message"], text: "public.message", alias: "m"))
        #expect(parsed.joins.map(\.table.qualifier) == ["c", "co"])
        #expect(parsed.joins.map(\.isLeft) == [false, true])
        #expect(parsed.joins[0].conjuncts == [.equality(.init(qualifier: "c", name: "id"), .init(qualifier: "m", name: "contact_id"))])
        #expect(parsed.joins[1].conjuncts.count == 2)
        #expect(parsed.joins[1].conjuncts[1] == .equality(.init(qualifier: "co", name: "id"), .init(qualifier: "c", name: "company_id")))
        #expect(parsed.whereText == "m.folder = $1 AND m.received BETWEEN $2 AND $3")
        #expect(parsed.items.map(\.alias) == [nil, "title", "sender", nil])
        #expect(parsed.items[0].column == .init(qualifier: "m", name: "id"))
        #expect(parsed.orderBy.count == 3)
        #expect(parsed.orderBy[0].column == .init(qualifier: "c", name: "name"))
        #expect(parsed.orderBy[0].collation == "C" && parsed.orderBy[0].descending && parsed.orderBy[0].nulls == .last)
        #expect(parsed.orderBy[2].column == .init(qualifier: "M", name: "X"))
        #expect(parsed.fromText.hasPrefix("public.message AS m") && parsed.fromText.hasSuffix("co.id = c.company_id"))
        #expect(parsed.functions.map(\.name) == ["count_words"])
    }

    @Test("every shape a live query cannot follow row by row is named", arguments: [
        ("SELECT a, count(*) FROM t GROUP BY a ORDER BY a", RefetchReason.Shape.groupBy),
        ("SELECT DISTINCT a FROM t", .distinct),
        ("SELECT * FROM t ORDER BY a LIMIT 10", .limit),
        ("SELECT * FROM t OFFSET 5", .limit),
        ("SELECT * FROM t ORDER BY a FETCH FIRST 3 ROWS ONLY", .limit),
        ("WITH x AS (SELECT 1) SELECT * FROM x", .commonTableExpression),
        ("SELECT * FROM t UNION SELECT * FROM u", .compoundSelect),
        ("SELECT * FROM (SELECT * FROM t) s", .subqueryInFrom),
        ("SELECT * FROM t, u", .commaJoin),
        ("SELECT * FROM t RIGHT JOIN u ON u.id = t.u", .joinKind("RIGHT")),
        ("SELECT * FROM t JOIN u USING (id)", .joinUsing),
        ("SELECT * FROM generate_series(1, 3) g", .tableValuedFunction("generate_series")),
        ("SELECT a, rank() OVER (ORDER BY a) FROM t", .windowFunction),
        ("SELECT * FROM t ORDER BY lower(a)", .orderByExpression("lower(a)")),
        ("SELECT 1", .noFrom),
        ("UPDATE t SET a = 1", .notPlainSelect),
        ("SELECT 1; SELECT 2", .notPlainSelect),
        ("VALUES (1)", .values),
        ("SELECT 'open", .unreadableSQL),
        ("", .emptySQL),
    ])
    func shapes(sql: String, shape: RefetchReason.Shape) {
        let parsed = PostgresSelectParser.parse(sql)
        if case let .orderByExpression(text) = shape {
            #expect(parsed.orderBy.first?.text == text && parsed.orderBy.first?.column == nil, "\(sql)")
        } else {
            #expect(parsed.shapes.contains(shape), "\(sql): \(parsed.shapes)")
        }
    }

    @Test("an aggregate in a subquery is the subquery's; the current time is noticed wherever it is")
    func expressions() {
        let parsed = PostgresSelectParser.parse("SELECT t.*, (SELECT count(*) FROM u WHERE u.t = t.id) FROM t WHERE t.at > CURRENT_TIMESTAMP - interval '1 day'")
        #expect(parsed.functions.contains { $0.name == "count" && $0.inSubquery })
        #expect(parsed.readsCurrentTime)
        #expect(parsed.shapes.isEmpty)
        #expect(!PostgresSelectParser.parse("SELECT t.current_date FROM t").readsCurrentTime)
        let distinct = PostgresSelectParser.parse("SELECT a FROM t WHERE a IS NOT DISTINCT FROM $1 ORDER BY a")
        #expect(distinct.shapes.isEmpty && distinct.whereText == "a IS NOT DISTINCT FROM $1" && distinct.orderBy.count == 1)
    }

    @Test("a refetched SELECT's order is total when its ORDER BY ends with the identity column: its name, position or expression")
    func totalOrder() {
        func total(_ sql: String, identity: Int = 0, name: String = "id", columns: Int = 2) -> Bool {
            PostgresPlanner<Int64>.endsWithIdentity(PostgresSelectParser.parse(sql), identityColumn: identity, identityName: name, columns: columns)
        }
        let grouped = "SELECT c.id, count(*) AS n FROM contact c JOIN message m ON m.contact_id = c.id GROUP BY c.id ORDER BY n DESC"
        #expect(!total(grouped))
        #expect(total(grouped + ", c.id"))
        #expect(total(grouped + ", 1"))
        #expect(total(grouped + ", id"))
        #expect(!total(grouped + ", 2"))
        #expect(!total(grouped + ", m.id"))
        #expect(!total("SELECT c.id, c.name FROM contact c"))
        #expect(!total("SELECT * FROM contact ORDER BY name", columns: 3))
    }

    @Test("placeholders are numbered by their names as written, case for case; casts, strings and comments are left alone")
    func placeholders() throws {
        let (sql, names) = try #require(PostgresLiveQueryRequest<Int64>.numberingPlaceholders(
            in: "SELECT id FROM t WHERE owner = :ownerId AND kind = :kind::text AND x <> ':no' -- :no\n AND y = :ownerId OR z = :ownerid"))
        #expect(names == ["ownerId", "kind", "ownerid"])
        #expect(sql == "SELECT id FROM t WHERE owner = $1 AND kind = $2::text AND x <> ':no' -- :no\n AND y = $1 OR z = $3")
    }
}
