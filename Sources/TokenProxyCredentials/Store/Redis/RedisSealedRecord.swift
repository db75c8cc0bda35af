import Foundation

/// What a Redis store value holds once opened: the record (a grant, or the pending
/// revocations) and its generation.
///
/// The generation counts the writes of the value's field, and is kept in the hash beside it
/// (`generation:FIELD`, kept when the field is deleted). It is sealed with the record, so
/// whoever can write to Redis but lacks the key cannot change it. A proxy remembers the
/// highest generation it read of each field and refuses a value older than that: an old
/// value copied back over a newer one (a replay) is not used.
struct RedisSealedRecord<Record: Codable>: Codable {
    /// How many writes the field had seen when this value was written, this one included.
    var generation: Int
    /// The record.
    var record: Record

    /// The hash field holding `field`'s generation counter.
    static func generationField(_ field: String) -> String { "generation:\(field)" }

    /// The counter in a `generation:FIELD` value, bounded so that counting on never
    /// overflows; 0 when absent or not a number.
    static func generation(_ text: [UInt8]?) -> Int {
        guard let text, let value = Int(String(decoding: text, as: UTF8.self)), value > 0 else { return 0 }
        return min(value, 1 << 52)
    }
}
