import FareSyncIdentity

/// The body of `accounts:sendVerificationCode`: Google's `SendVerificationCodeRequest`. The
/// `recaptchaToken` (and the iOS receipt) the SDKs send are accepted and not read.
struct SendVerificationCodeRequest: Codable, Sendable {
    var phoneNumber: String?
}

extension SendVerificationCodeRequest {
    init(from decoder: any Decoder) throws {
        let body = try decoder.container(keyedBy: CodingKeys.self)
        self.init(phoneNumber: try body.member(.phoneNumber))
    }
}

/// Its answer: Google's `SendVerificationCodeResponse`, the session the code belongs to.
struct SendVerificationCodeResponse: JSONResponse, Codable, Sendable {
    var sessionInfo: String
}

/// The answer of `GET …/v1/recaptchaParams`, which an SDK asks before it shows a reCAPTCHA:
/// Google's `GetRecaptchaParamResponse` with the emulator's plainly fake values, since no
/// reCAPTCHA is checked (an SDK in emulator mode does not show one).
struct RecaptchaParamsResponse: JSONResponse, Codable, Sendable {
    var kind = "identitytoolkit#GetRecaptchaParamResponse"
    var recaptchaStoken = "This-is-a-fake-token__Dont-send-this-to-the-Recaptcha-service__The-Auth-Emulator-does-not-support-Recaptcha"
    var recaptchaSiteKey = "Fake-key__Do-not-send-this-to-Recaptcha_"
}

/// The codes not sent, as the Auth emulator's own REST API lists them
/// (`GET /emulator/v1/projects/P/verificationCodes`).
struct VerificationCodesResponse: JSONResponse, Codable, Sendable {
    struct Code: Codable, Sendable {
        var code: String
        var phoneNumber: String
        var sessionInfo: String
    }

    var verificationCodes: [Code]
}

extension VerificationCodesResponse {
    init(_ codes: [VerificationCode]) {
        self.init(verificationCodes: codes.map { Code(code: $0.code, phoneNumber: $0.phoneNumber, sessionInfo: $0.sessionInfo) })
    }
}
