import Logging
import Synchronization

/// A weak reference, for closures that must not keep their target alive.
final class WeakReference<Object: AnyObject> {
    weak var object: Object?

    init(_ object: Object) {
        self.object = object
    }
}
