/// An identifier type whose values are equal exactly when their bytes are equal: fixed-size, with
/// no padding, no references and no custom `==`. Integer types conform; conform `UUID` (or your
/// own trivial identifier struct) in your app to make large diffs about twice as fast.
///
/// The diff hashes such identifiers by their bytes with a fast multiply-mix hash keyed by a
/// per-process random seed (so crafted identifiers cannot force collisions), instead of the
/// general `Hasher`, whose setup dominates the diff of small identifiers.
///
/// In your app: `extension UUID: @retroactive BitwiseIdentifier {}`.
///
/// Conforming a type that breaks the promise (a `Double`, where `0.0 == -0.0`; a struct with
/// padding or a class reference) makes equal identifiers look different to the diff.
public protocol BitwiseIdentifier: Hashable {}

extension Int: BitwiseIdentifier {}
extension Int64: BitwiseIdentifier {}
extension Int32: BitwiseIdentifier {}
extension Int16: BitwiseIdentifier {}
extension UInt: BitwiseIdentifier {}
extension UInt64: BitwiseIdentifier {}
extension UInt32: BitwiseIdentifier {}
extension UInt16: BitwiseIdentifier {}
