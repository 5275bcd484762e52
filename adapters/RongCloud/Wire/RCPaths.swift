/// The Server API paths the adapter calls and the sandbox serves.
public enum RCPaths {
    public static let getToken = "/user/getToken.json"
    public static let privatePublish = "/message/private/publish.json"
    public static let groupPublish = "/message/group/publish.json"
    public static let recall = "/message/recall.json"
    public static let expansionSet = "/message/expansion/set.json"
    public static let expansionDelete = "/message/expansion/delete.json"
    public static let expansionQuery = "/message/expansion/query.json"
    public static let privateHistory = "/v3/message/private/query.json"
    public static let groupHistory = "/v3/message/group/query.json"
}
