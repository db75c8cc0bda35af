import Testing

@testable import TokenProxyUpstream

/// An engine's table of running transfers: each transfer found by its slot, slots used
/// again, and a transfer that ended (or was never added) not found.
struct TransferTableTests {
    @Test func keepsFindsAndRemovesTransfersBySlot() {
        var table = TransferTable()
        let transfers = (0..<4).map { _ in CurlTransfer.unstarted() }
        let stranger = CurlTransfer.unstarted()
        for transfer in transfers {
            table.insert(transfer)
        }
        #expect(table.count == 4 && table.capacity == 4)
        #expect(transfers.allSatisfy { table.contains($0) })
        #expect(!table.contains(stranger))

        let removed = table.remove(transfers[1])
        let removedAgain = table.remove(transfers[1])
        #expect(removed && !removedAgain)
        #expect(!table.contains(transfers[1]) && transfers[1].tableSlot == -1)
        let removedStranger = table.remove(stranger)
        #expect(!removedStranger)
        #expect(table.count == 3)
        #expect(table[1] == nil)

        // The freed slot is used again; the others stay where they are.
        table.insert(stranger)
        #expect(table.capacity == 4 && table.count == 4)
        #expect(table[1] === stranger)
        #expect(table[0] === transfers[0] && table[2] === transfers[2] && table[3] === transfers[3])

        // Removing while going through the slots by index sees every transfer once.
        var seen = 0
        for index in 0..<table.capacity {
            guard let transfer = table[index] else { continue }
            seen += 1
            let removedHere = table.remove(transfer)
            #expect(removedHere)
        }
        #expect(seen == 4 && table.count == 0)
        #expect(!transfers.contains { table.contains($0) })
    }

    /// A transfer whose slot number lies in another table's range is not taken for the one
    /// that holds that slot there.
    @Test func aSlotIsOnlyItsTransfers() {
        var first = TransferTable()
        var second = TransferTable()
        let a = CurlTransfer.unstarted()
        let b = CurlTransfer.unstarted()
        first.insert(a)
        second.insert(b)
        #expect(a.tableSlot == 0 && b.tableSlot == 0)
        #expect(!first.contains(b) && !second.contains(a))
        let removedB = first.remove(b)
        #expect(!removedB)
        #expect(first.contains(a))
    }
}
