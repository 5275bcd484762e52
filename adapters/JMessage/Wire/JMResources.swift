import IMCore

/// The error envelope: `{"error": {"code": 899008, "message": "Basic authentication failed"}}`.
public struct JMErrorEnvelope: Codable, Hashable, Sendable {
    public struct Body: Codable, Hashable, Sendable {
        public var code: Int
        public var message: String
        public init(code: Int, message: String) {
            self.code = code
            self.message = message
        }
    }
    public var error: Body
    public init(code: Int, message: String) { self.error = Body(code: code, message: message) }
}

/// `POST /v1/resource?type=…` answer. Which keys appear depends on the type: image has
/// width/height/format, file has fname/hash, voice has hash/format; all have media_id, media_crc32, fsize.
public struct JMUploadResult: Codable, Hashable, Sendable {
    public var mediaID: String
    public var mediaCrc32: Int64
    public var width: Int?
    public var height: Int?
    public var format: String?
    public var fsize: Int64
    public var hash: String?
    public var fname: String?

    public init(mediaID: String, mediaCrc32: Int64, width: Int? = nil, height: Int? = nil, format: String? = nil, fsize: Int64,
                hash: String? = nil, fname: String? = nil) {
        self.mediaID = mediaID
        self.mediaCrc32 = mediaCrc32
        self.width = width
        self.height = height
        self.format = format
        self.fsize = fsize
        self.hash = hash
        self.fname = fname
    }

    enum CodingKeys: String, CodingKey {
        case width, height, format, fsize, hash, fname
        case mediaID = "media_id", mediaCrc32 = "media_crc32"
    }
}

/// `GET /v1/resource?mediaId=` answer: `{"url": "http://…"}`.
public struct JMDownloadResult: Codable, Hashable, Sendable {
    public var url: String
    public init(url: String) { self.url = url }
}

/// One entry of `POST /v1/users/` (also the admin body of `POST /v1/admins/`).
public struct JMUserRegistration: Codable, Hashable, Sendable {
    public var username: String
    public var password: String
    public var nickname: String?
    public var avatar: String?
    public init(username: String, password: String, nickname: String? = nil, avatar: String? = nil) {
        self.username = username
        self.password = password
        self.nickname = nickname
        self.avatar = avatar
    }
}

/// One item of the `201` answer to `POST /v1/users/`: `{"username"}` or `{"username", "error": {…}}`.
public struct JMUserRegistrationResult: Codable, Hashable, Sendable {
    public var username: String
    public var error: JMErrorEnvelope.Body?
    public init(username: String, error: JMErrorEnvelope.Body? = nil) {
        self.username = username
        self.error = error
    }
}

/// `POST /v1/groups/` body and answer (the doc's sample is sloppy JSON; these keys are our reading).
public struct JMGroupCreate: Codable, Hashable, Sendable {
    public var ownerUsername: String
    public var name: String
    public var membersUsername: [String]?
    public var desc: String?
    public var flag: Int?
    public var avatar: String?
    public init(ownerUsername: String, name: String, membersUsername: [String]? = nil, desc: String? = nil, flag: Int? = nil,
                avatar: String? = nil) {
        self.ownerUsername = ownerUsername
        self.name = name
        self.membersUsername = membersUsername
        self.desc = desc
        self.flag = flag
        self.avatar = avatar
    }
    enum CodingKeys: String, CodingKey {
        case name, desc, flag, avatar
        case ownerUsername = "owner_username", membersUsername = "members_username"
    }
}

public struct JMGroupCreated: Codable, Hashable, Sendable {
    public var gid: Int64
    public var ownerUsername: String
    public var name: String
    public var membersUsername: [String]
    public var desc: String
    public var maxMemberCount: Int
    public init(gid: Int64, ownerUsername: String, name: String, membersUsername: [String], desc: String, maxMemberCount: Int) {
        self.gid = gid
        self.ownerUsername = ownerUsername
        self.name = name
        self.membersUsername = membersUsername
        self.desc = desc
        self.maxMemberCount = maxMemberCount
    }
    enum CodingKeys: String, CodingKey {
        case gid, name, desc
        case ownerUsername = "owner_username", membersUsername = "members_username", maxMemberCount = "MaxMemberCount"
    }
}
