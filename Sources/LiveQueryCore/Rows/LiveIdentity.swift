import Foundation

/// A type that identifies a live query's rows in changesets, snapshots and lookups: the
/// request's identity value (the rowid, or a unique column of any storage class) as the app's own
/// type, so that a record keyed by `UUID` lines up with the list.
///
/// ```swift
/// import Foundation
/// import LiveQuery
///
/// let contacts = LiveQueryRequest(table: "contact", identity: "uuid", as: UUID.self,
///                                 sort: [SortTerm("name")])
/// ```
///
/// Lookups by identity use ``identityValue``; when two stored values decode to equal identities
/// (a UUID stored once in upper and once in lower case) the live query reports a duplicate
/// identity and keeps the first. The conformances here are: `Int64` and `Int` (INTEGER), `UUID` (a 16-byte BLOB, or TEXT in
/// the canonical 36-character form), `String` and ``SQLText`` (TEXT; `String` compares by Unicode
/// canonical equivalence, so prefer ``SQLText`` when identities may differ only in normalization),
/// `Data` (BLOB) and ``SQLValue`` (anything). A row whose identity does not decode (a NULL, a
/// malformed UUID) is left out and counted in ``LiveResult/leftOut``; an identity column whose
/// values are of a storage class the type never decodes (TEXT for `Int64`) fails at open.
public protocol LiveIdentity: Hashable, Sendable {
    /// The identity stored as `value`, or `nil` when `value` cannot be one.
    init?(identityValue value: SQLValue)
    /// The value this identity is stored as, in the form ``init(identityValue:)`` reads.
    var identityValue: SQLValue { get }
    /// Whether values of `storageClass` can be identities of this type at all. A query whose
    /// identity column holds values of a class the type never decodes fails to open with
    /// ``InvalidRequest/identityTypeMismatch(identity:found:examples:declared:)``, rather than
    /// leaving every such row out. The default is `true`: every value is judged row by row.
    static func decodes(_ storageClass: SQLStorageClass) -> Bool
}

extension LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { true }
}

extension Int64: LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .integer }
    public init?(identityValue value: SQLValue) {
        guard case let .integer(integer) = value else { return nil }
        self = integer
    }
    public var identityValue: SQLValue { .integer(self) }
}

extension Int: LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .integer }
    public init?(identityValue value: SQLValue) {
        guard case let .integer(integer) = value, let exact = Int(exactly: integer) else { return nil }
        self = exact
    }
    public var identityValue: SQLValue { .integer(Int64(self)) }
}

extension String: LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .text }
    public init?(identityValue value: SQLValue) {
        guard case let .text(text) = value, text.isValidUTF8 else { return nil }
        self = text.string
    }
    public var identityValue: SQLValue { .text(SQLText(self)) }
}

extension SQLText: LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .text }
    public init?(identityValue value: SQLValue) {
        guard case let .text(text) = value else { return nil }
        self = text
    }
    public var identityValue: SQLValue { .text(self) }
}

extension SQLValue: LiveIdentity {
    public init?(identityValue value: SQLValue) {
        guard !value.isNull else { return nil }
        self = value
    }
    public var identityValue: SQLValue { self }
}

extension Data: LiveIdentity {
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .blob }
    public init?(identityValue value: SQLValue) {
        guard case let .blob(bytes) = value else { return nil }
        self = Data(bytes)
    }
    public var identityValue: SQLValue { .blob(Array(self)) }
}

extension UUID: LiveIdentity {
    /// A 16-byte BLOB (GRDB's default), or TEXT in the 36-character form, in either case. Two
    /// stored texts that differ only in case name the same UUID: the live query reports that as
    /// a duplicate identity.
    public static func decodes(_ storageClass: SQLStorageClass) -> Bool { storageClass == .blob || storageClass == .text }

    public init?(identityValue value: SQLValue) {
        switch value {
        case let .blob(bytes):
            guard bytes.count == 16 else { return nil }
            self = bytes.withUnsafeBytes { UUID(uuid: $0.loadUnaligned(as: uuid_t.self)) }
        case let .text(text):
            guard text.isValidUTF8, let uuid = UUID(uuidString: text.string) else { return nil }
            self = uuid
        default:
            return nil
        }
    }
    public var identityValue: SQLValue {
        withUnsafeBytes(of: uuid) { .blob(Array($0)) }
    }
}
