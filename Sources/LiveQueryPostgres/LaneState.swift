/// Where the refetch lanes stand, as one value (`PostgresDatabaseRunner+Lane.swift`): each lane is
/// free, or reads apart the queries a round gave it — each of those, until the lane hands it back,
/// with what it is to be told then (`Held`: the commits that touched it meanwhile, a lost track, its
/// close), in order. A query is on one lane at most, a lane is taken only while free and never for
/// nothing, and something is held only for a query a lane has: anything else is refused. Once the
/// runner shuts down the lanes are closed: none is taken again, so no query is read apart after.
///
/// Events in: a round takes a lane for some queries (``take(_:for:)``); something is to be told to
/// a query (``hold(_:for:)``: told now, or held while a lane has it); the lane hands a query back
/// once read (``handBack(_:)``); the lane's read finished or failed (``finished(_:)``); the runner
/// shuts down (``close()``). The runner then holds `.finish` for each query like any other news,
/// and each lane hands its queries back once its reads end (its connection closed). Actions out:
/// what to tell whom. No I/O: `PostgresDatabaseRunner` holds it on its actor, runs the lanes' reads
/// and tells the queries.
struct LaneState<Query, Held> {
    /// A query a lane reads apart.
    struct ReadApart {
        var query: Query
        /// What it is told once handed back, in the order it happened.
        var held: [Held] = []
    }

    /// One lane.
    enum Lane {
        /// Nothing to read: a round may take it.
        case free
        /// Taken by a round: the queries it has not handed back yet (none once it read them all, but
        /// it stays taken until its transaction ends).
        case reading([ObjectIdentifier: ReadApart])
    }

    /// What to do with something to tell a query.
    enum Delivery {
        /// No lane has it: tell it now.
        case tell(Held)
        /// A lane reads it apart: held until the lane hands it back.
        case held
    }

    /// The lanes, by number.
    private(set) var lanes: [Lane]
    /// Whether the runner shut down: no lane is taken again (a round that began a lane's
    /// transaction before it leaves its queries alone), and one reading then is not free after.
    private(set) var isClosed = false

    /// `count` lanes, all free.
    init(count: Int) {
        lanes = Array(repeating: .free, count: max(0, count))
    }

    /// The numbers of the free lanes, in order: none once closed.
    var free: [Int] {
        guard !isClosed else { return [] }
        return lanes.indices.filter {
            if case .free = lanes[$0] { return true }
            return false
        }
    }

    /// Whether every lane is reading (or the lanes are closed): refetched queries that are due wait for one.
    var allBusy: Bool { free.isEmpty }

    /// The lane that reads `query` apart, if any.
    /// - Complexity: O(lanes).
    func lane(of query: ObjectIdentifier) -> Int? {
        lanes.indices.first { number in
            guard case let .reading(queries) = lanes[number] else { return false }
            return queries[query] != nil
        }
    }

    /// A round takes lane `number` to read `queries` apart: `false` (nothing changes) when the lanes
    /// are closed, there is no such lane, it is reading already, `queries` is empty, or one of them
    /// is listed twice or is read apart already — the round then leaves them to the rounds.
    mutating func take(_ number: Int, for queries: [(id: ObjectIdentifier, query: Query)]) -> Bool {
        guard !isClosed, lanes.indices.contains(number), case .free = lanes[number], !queries.isEmpty else { return false }
        var reading: [ObjectIdentifier: ReadApart] = [:]
        for (id, query) in queries {
            guard reading[id] == nil, lane(of: id) == nil else { return false }
            reading[id] = ReadApart(query: query)
        }
        lanes[number] = .reading(reading)
        return true
    }

    /// Something to tell `query`: at once when no lane has it, else held for when its lane hands it
    /// back (after what was held before).
    /// - Complexity: O(lanes).
    mutating func hold(_ what: Held, for query: ObjectIdentifier) -> Delivery {
        guard let number = lane(of: query) else { return .tell(what) }
        update(number) { $0[query]?.held.append(what) }
        return .held
    }

    /// `query`'s lane hands it back: what was held for it, to tell it now in order; `nil` when no
    /// lane has it. Its lane stays taken until ``finished(_:)``.
    mutating func handBack(_ query: ObjectIdentifier) -> [Held]? {
        guard let number = lane(of: query) else { return nil }
        var handed: ReadApart?
        update(number) { handed = $0.removeValue(forKey: query) }
        return handed?.held
    }

    /// Lane `number`'s read finished or failed: it is free again (though taken by nobody once
    /// closed). Returns the queries it had not handed back (none when each was handed back as it
    /// was read), with what was held for them, to hand back now; `nil` when the lane was not reading.
    mutating func finished(_ number: Int) -> [ReadApart]? {
        guard lanes.indices.contains(number), case let .reading(queries) = lanes[number] else { return nil }
        lanes[number] = .free
        return Array(queries.values)
    }

    /// The runner shuts down: no lane is taken again. A lane reading now goes on holding what is
    /// told to its queries (their `.finish`) until it hands them back, as its reads end.
    mutating func close() {
        isClosed = true
    }

    /// Changes the queries of lane `number`, which reads. The lane is set free meanwhile so that
    /// the dictionary is not copied (its one reference is the one changed).
    private mutating func update(_ number: Int, _ change: (inout [ObjectIdentifier: ReadApart]) -> Void) {
        guard case var .reading(queries) = lanes[number] else { return }
        lanes[number] = .free
        change(&queries)
        lanes[number] = .reading(queries)
    }
}

extension LaneState.Delivery: Equatable where Held: Equatable {}
