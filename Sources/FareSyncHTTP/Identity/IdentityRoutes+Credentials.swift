import FareSyncIdentity
import Hummingbird
import Logging

/// The sign-ins by credential the app's SDK makes: a phone number's code, an identity
/// provider's ID token, a custom token; and the emulator's list of the codes it did not send.
extension IdentityRoutes {
    func addCredentialSignIns(to v1: RouterGroup<Context>) {
        v1.post("accounts:sendVerificationCode") { request, context in
            var request = request
            return try await sendVerificationCode(&request, client: context.clientAddress, logger: context.logger)
        }
        v1.post("accounts:signInWithPhoneNumber") { request, context in
            var request = request
            return try await signInWithPhoneNumber(&request, client: context.clientAddress)
        }
        v1.get("recaptchaParams") { _, _ in RecaptchaParamsResponse() }
        v1.post("accounts:signInWithIdp") { request, context in
            var request = request
            return try await signInWithIdp(&request, client: context.clientAddress)
        }
        v1.post("accounts:signInWithCustomToken") { request, context in
            var request = request
            let body = try await JSONBody.decode(SignInWithCustomTokenRequest.self, of: &request)
            return SignInWithCustomTokenResponse(try await identity.signIn(customToken: body.token, client: context.clientAddress))
        }
    }

    /// The code goes nowhere: it is logged, as the emulator prints it, and listed at
    /// `verificationCodes`.
    func sendVerificationCode(_ request: inout Request, client: String?, logger: Logger) async throws -> SendVerificationCodeResponse {
        let body = try await JSONBody.decode(SendVerificationCodeRequest.self, of: &request)
        let code = try await identity.sendVerificationCode(phoneNumber: body.phoneNumber, client: client)
        logger.info("To verify the phone number \(code.phoneNumber), use the code \(code.code).")
        return SendVerificationCodeResponse(sessionInfo: code.sessionInfo)
    }

    func signInWithPhoneNumber(_ request: inout Request, client: String?) async throws -> SignInWithPhoneNumberResponse {
        let body = try await JSONBody.decode(SignInWithPhoneNumberRequest.self, of: &request)
        let signedIn = try await identity.signIn(sessionInfo: body.sessionInfo, code: body.code, idToken: body.idToken, client: client)
        return SignInWithPhoneNumberResponse(signedIn)
    }

    func signInWithIdp(_ request: inout Request, client: String?) async throws -> SignInWithIdpResponse {
        let body = try await JSONBody.decode(SignInWithIdpRequest.self, of: &request)
        let fields = try body.fields()
        guard let providerId = fields["providerId"]?.lowercased(), !providerId.isEmpty else {
            throw IdentityError("INVALID_CREDENTIAL_OR_PROVIDER_ID : Invalid IdP response/credential: no providerId")
        }
        let providerToken = fields["id_token"]
        let signedIn = try await identity.signIn(providerId: providerId, providerToken: providerToken, idToken: body.idToken, client: client)
        return SignInWithIdpResponse(signedIn, providerId: providerId, providerToken: providerToken ?? "")
    }

    /// As the emulator, without a credential, to a request whose `Host` is the loopback interface;
    /// with an admin token configured (a server others reach), to the admin only.
    func verificationCodes(_ request: Request, project: String?) async throws -> VerificationCodesResponse {
        guard admin.mayReadTestCodes(request) else { throw IdentityError("INSUFFICIENT_PERMISSION", status: 403) }
        guard project == identity.project else { throw IdentityError("PROJECT_NOT_FOUND", status: 404) }
        return VerificationCodesResponse(try await identity.verificationCodes())
    }
}
