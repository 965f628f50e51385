/// Marks the elements of `values` that belong to one longest strictly increasing subsequence.
///
/// The diff keeps these elements in place and reports the rest as moves, so that items keeping
/// their relative order are never reported as moved. Patience sorting: O(k log k) in general and
/// O(k) when the sequence is already nearly sorted (each element extends the last pile).
@inlinable
func _longestIncreasingSubsequenceMask(_ values: [Int32]) -> [Bool] {
    let count = values.count
    var mask = [Bool](repeating: false, count: count)
    guard count > 0 else { return mask }
    var pileTops: [Int32] = []       // index of the smallest tail of each pile length
    var predecessor = [Int32](repeating: -1, count: count)
    pileTops.reserveCapacity(min(count, 1024))
    for index in 0..<count {
        let value = values[index]
        if let last = pileTops.last, values[Int(last)] >= value {
            var low = 0
            var high = pileTops.count - 1
            while low < high {
                let middle = (low + high) >> 1
                if values[Int(pileTops[middle])] < value { low = middle + 1 } else { high = middle }
            }
            pileTops[low] = Int32(truncatingIfNeeded: index)
            predecessor[index] = low > 0 ? pileTops[low - 1] : -1
        } else {
            predecessor[index] = pileTops.last ?? -1
            pileTops.append(Int32(truncatingIfNeeded: index))
        }
    }
    var cursor = pileTops.last ?? -1
    while cursor >= 0 {
        mask[Int(cursor)] = true
        cursor = predecessor[Int(cursor)]
    }
    return mask
}
