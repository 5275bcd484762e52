/// A message body as RongCloud writes it in a publish form, a routed callback or a history row:
/// `objectName` and the `content` JSON text.
public struct RCContent: Hashable, Sendable {
    public var objectName: String
    public var content: String
    public init(objectName: String, content: String) {
        self.objectName = objectName
        self.content = content
    }
}
