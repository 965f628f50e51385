import ListDiff

/// One look for commits at a time per live query, shared by the clients' `sync`s: a `sync` that
/// arrives while a look runs waits for the next one, which then serves every `sync` that arrived
/// meanwhile. However many `sync`s come, from one client or thousands, the database sees one look
/// after another at most — never one each.
actor SharedLook {
    private let look: @Sendable () async throws -> ListStateID?
    /// The look running (or about to begin), by number.
    private var current: (number: Int, task: Task<ListStateID?, any Error>)?
    /// The look that begins when the current one ends: every `sync` that came after the current began.
    private var following: (number: Int, task: Task<ListStateID?, any Error>)?
    private var numbered = 0
    /// Looks begun so far (the tests count them).
    private(set) var looks = 0

    init(_ look: @escaping @Sendable () async throws -> ListStateID?) {
        self.look = look
    }

    /// The state that holds every commit made before the call.
    func state() async throws -> ListStateID? {
        if let following { return try await following.task.value }
        let previous = current?.task
        numbered += 1
        let number = numbered
        let task = Task { () async throws -> ListStateID? in
            if let previous { _ = await previous.result }
            return try await self.run(number)
        }
        if current == nil { current = (number, task) } else { following = (number, task) }
        return try await task.value
    }

    private func run(_ number: Int) async throws -> ListStateID? {
        if let following, following.number == number {
            current = following
            self.following = nil
        }
        looks += 1
        defer { if current?.number == number { current = nil } }
        return try await look()
    }
}
