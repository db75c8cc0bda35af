/// An engine's running transfers, which the table keeps alive from their set-up to their end
/// (engine thread only). Each transfer remembers its slot, so adding, finding and removing
/// one is an index into an array: no hashing per request, as a dictionary keyed by the
/// transfer's identity would need. Freed slots are used again, so the array grows to the most
/// transfers the engine ran at once and no further.
struct TransferTable {
    private var slots: [CurlTransfer?] = []
    /// The indexes of the empty slots.
    private var free: [Int] = []
    /// The number of transfers in the table.
    private(set) var count = 0

    /// Adds `transfer`, which is in no table (a transfer already in this one stays where it is).
    mutating func insert(_ transfer: CurlTransfer) {
        guard !self.contains(transfer) else {
            assertionFailure("a transfer was added to an engine's table twice")
            return
        }
        let slot: Int
        if let reused = self.free.popLast() {
            slot = reused
            self.slots[slot] = transfer
        } else {
            slot = self.slots.count
            self.slots.append(transfer)
        }
        transfer.tableSlot = slot
        self.count += 1
    }

    /// Whether `transfer` is in the table.
    func contains(_ transfer: CurlTransfer) -> Bool {
        let slot = transfer.tableSlot
        return slot >= 0 && slot < self.slots.count && self.slots[slot] === transfer
    }

    /// Removes `transfer`; false when it was not in the table (it ended already).
    mutating func remove(_ transfer: CurlTransfer) -> Bool {
        guard self.contains(transfer) else { return false }
        let slot = transfer.tableSlot
        self.slots[slot] = nil
        self.free.append(slot)
        transfer.tableSlot = -1
        self.count -= 1
        return true
    }

    /// The number of slots, full or empty: the bound of ``subscript(_:)``'s indexes.
    var capacity: Int { self.slots.count }

    /// The transfer in slot `index` (below ``capacity``), if any. Removing transfers while
    /// going through the slots by index is safe: a removal empties a slot and never moves
    /// another transfer.
    subscript(_ index: Int) -> CurlTransfer? { self.slots[index] }
}
