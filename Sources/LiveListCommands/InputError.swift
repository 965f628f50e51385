/// Bad input to a command: one clear line on standard error and exit status 2.
package struct InputError: Error, CustomStringConvertible {
    package var description: String
    package init(_ description: String) { self.description = description }
}
