/// What an engine knows of a table for stating mutations' effects and filters exactly: its
/// columns, how each stores and compares values, and the triggers that may change what a
/// statement does.
public struct TableFacts: Hashable, Sendable {
    /// A column.
    public struct Column: Hashable, Sendable {
        /// What a column not given in an INSERT holds.
        public enum Default: Hashable, Sendable {
            /// This value.
            case value(SQLValue)
            /// A value the engine cannot state (an expression, a clock, a sequence, a generated
            /// column).
            case unstated
        }

        /// Its name, as the database spells it.
        public var name: String
        /// The classes of values stored exactly as given (no conversion).
        public var storesExactly: Set<SQLStorageClass>
        /// The classes of values compared with it exactly as a stated order compares (no
        /// conversion of either side).
        public var comparesExactly: Set<SQLStorageClass>
        /// How its text compares (`nil`: a collation a client cannot reproduce).
        public var collation: SortTerm.Collation?
        /// What an INSERT that does not name it stores.
        public var defaultValue: Default
        /// Whether a statement may not set it (a generated column).
        public var isGenerated: Bool

        /// A column.
        public init(name: String, storesExactly: Set<SQLStorageClass>, comparesExactly: Set<SQLStorageClass>, collation: SortTerm.Collation?,
                    defaultValue: Default, isGenerated: Bool = false) {
            self.name = name
            self.storesExactly = storesExactly
            self.comparesExactly = comparesExactly
            self.collation = collation
            self.defaultValue = defaultValue
            self.isGenerated = isGenerated
        }
    }

    /// The table's name, as the database spells it.
    public var name: String
    /// Its columns.
    public var columns: [Column]
    /// The triggers that fire on its changes (beyond the engine's own).
    public var triggers: [String]
    /// Whether unquoted names match its columns whatever their case (SQLite), or only as
    /// folded by the tokenizer (PostgreSQL: quoted names exactly).
    public var namesIgnoreCase: Bool

    /// Facts of a table.
    public init(name: String, columns: [Column], triggers: [String], namesIgnoreCase: Bool) {
        self.name = name
        self.columns = columns
        self.triggers = triggers
        self.namesIgnoreCase = namesIgnoreCase
    }

    /// The column `name` refers to.
    public func column(_ name: String) -> Column? {
        columns.first { namesIgnoreCase ? $0.name.asciiLowercased == name.asciiLowercased : $0.name == name }
    }
}
