import Foundation
import LiveQueryCore

extension LiveQuery {
    /// Hands every event from now on — `.initial` with the current result first — to `receive`
    /// on the main actor, for as long as `owner` lives: the loop a main-actor model or controller
    /// runs over ``events``. Cancel the task to stop earlier.
    @MainActor
    public func follow<Owner: AnyObject & Sendable>(
        with owner: Owner, _ receive: @escaping @MainActor (Owner, LiveQueryEvent<ID>) -> Void
    ) -> Task<Void, Never> {
        let events = events
        return Task { [weak owner] in
            for await event in events {
                guard let owner else { return }
                receive(owner, event)
            }
        }
    }
}
