/// A list's ``RemoteLiveQuery/upToDate()`` calls waiting for their `synced`, as one value: each
/// gets the next number, its answer takes it out, a lost connection or a failed look takes them
/// all, in the order they were asked. What is sent and resumed is the caller's; tested without I/O.
struct SyncWaiters<Waiter> {
    private var waiting: [Int: Waiter] = [:]
    private var last = 0

    var isEmpty: Bool { waiting.isEmpty }

    /// The numbers waiting, in the order they were asked: what a new subscription asks again.
    var ids: [Int] { waiting.keys.sorted() }

    /// Keeps `waiter` under the next number, which the `sync` it sends carries.
    mutating func add(_ waiter: Waiter) -> Int {
        last += 1
        waiting[last] = waiter
        return last
    }

    /// The waiter `synced` answers, taken out; `nil` for a number not waiting (answered already,
    /// or failed with the others).
    mutating func answer(_ id: Int) -> Waiter? {
        waiting.removeValue(forKey: id)
    }

    /// Every waiter, in the order they were asked, taken out.
    mutating func takeAll() -> [Waiter] {
        let taken = ids.compactMap { waiting[$0] }
        waiting = [:]
        return taken
    }
}
