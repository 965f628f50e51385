import Foundation
import LiveListTools
import LiveListWire

// `livelist-allocations [--quick] [--filter PREFIX]`: counts the heap allocations of one run of
// each diff benchmark and prints {"bench", "allocations"} per line. It is a separate executable
// because counting needs a malloc interposer, which must not sit under the timed runs of
// `livelist bench` (it changes how the allocator behaves); `livelist bench` runs it and merges.
let arguments = CommandLine.arguments.dropFirst()
let quick = arguments.contains("--quick")
let filter = arguments.firstIndex(of: "--filter").flatMap { arguments.index(after: $0) < arguments.endIndex ? arguments[arguments.index(after: $0)] : nil }
let counts = DiffBenchmarks.countAllocations(quick: quick, selected: { name in filter.map { name.hasPrefix($0) } ?? true }, count: AllocationCounter.count)
for (name, allocations) in counts {
    let value: JSONValue = allocations.map { .integer(Int64($0)) } ?? .null
    print(JSONValue(["bench": .string(name), "allocations": value]).serialized)
}
