import LiveQueryCore
import NIOCore
import PostgresNIO

/// How a statement's parameters go with it: bound to its text (a statement sent as text), or to
/// the statement prepared on the connection from it (``PostgresSession/submit(prepared:_:_:)``).
enum StatementBinding: Sendable {
    case text(PostgresBindings)
    case prepared(StatementParameters)
}

/// The parameters of a prepared statement (``PostgresSession/submit(prepared:_:_:)``), each
/// encoded as a statement sent as text binds it: integers as `int8`, reals as `float8`, text as
/// `text`, blobs as `bytea`, NULL untyped, identity lists as `text[]`.
struct StatementParameters: Sendable {
    private(set) var values: [PostgresData] = []

    init() {}

    /// The parameters of a statement whose only parameter is the `text[]` `texts` (identities, keys).
    init(texts: [String]) { append(texts) }

    mutating func append(_ value: SQLValue) {
        switch value {
        case .null: values.append(PostgresData(type: .null, value: nil))
        case let .integer(number): append(encoding: number)
        case let .real(number): append(encoding: number)
        case let .text(text): append(encoding: text.string)
        case let .blob(bytes): append(encoding: ByteBuffer(bytes: bytes))
        }
    }

    /// A `text[]`.
    mutating func append(_ texts: [String]) { append(encoding: texts) }

    /// The parameters bound to a statement sent as text, each declared of its type (NULL untyped).
    var bindings: PostgresBindings {
        var bindings = PostgresBindings(capacity: values.count)
        for value in values { bindings.append(value) }
        return bindings
    }

    private mutating func append<Value: PostgresNonThrowingEncodable>(encoding value: Value) {
        var buffer = ByteBuffer()
        value.encode(into: &buffer, context: .default)
        values.append(PostgresData(type: Value.psqlType, formatCode: Value.psqlFormat, value: buffer))
    }

    /// The SQL type a parameter of `value`'s kind is bound as, for a `CAST` that fixes it in a
    /// prepared statement's text; `nil` for NULL (left untyped, as bound).
    static func typeName(of value: SQLValue) -> String? {
        switch value {
        case .null: nil
        case .integer: "int8"
        case .real: "float8"
        case .text: "text"
        case .blob: "bytea"
        }
    }
}
