import { accountOf, auditLog, updateAccountSettings } from './people-account-settings.ts'
import type { PeopleDeps } from './people-common.ts'
import { completeReset, requestReset } from './people-password-reset.ts'
import { changePassword, sessionPrincipal, signIn, signOut } from './people-sessions.ts'
import { completeSignup, createInvite, signupLink, startSignup } from './people-signup.ts'

/**
 * The back office's people (issue 15): sign-up through a mailed link, sign-in with a password,
 * sessions, password change and reset. A session becomes a Principal like an API credential's,
 * and every page action then runs the same operations as REST/JSON-RPC/GraphQL; what only a
 * person may do (the API switch, the IP allow list, the audit log) is here.
 */

type Args<F> = F extends (deps: PeopleDeps, ...args: infer A) => unknown ? A : never

/** The people use cases with their dependencies bound (the http adapter and the CLI use it). */
export function bindPeopleUseCases(deps: PeopleDeps) {
  const bind =
    <F extends (deps: PeopleDeps, ...args: never[]) => unknown>(f: F) =>
    (...args: Args<F>): ReturnType<F> =>
      (f as unknown as (d: PeopleDeps, ...a: Args<F>) => ReturnType<F>)(deps, ...args)
  return {
    settings: deps.settings,
    startSignup: bind(startSignup),
    signupLink: bind(signupLink),
    completeSignup: bind(completeSignup),
    createInvite: bind(createInvite),
    signIn: bind(signIn),
    signOut: bind(signOut),
    sessionPrincipal: bind(sessionPrincipal),
    changePassword: bind(changePassword),
    requestReset: bind(requestReset),
    completeReset: bind(completeReset),
    updateAccountSettings: bind(updateAccountSettings),
    account: bind(accountOf),
    auditLog: bind(auditLog),
  }
}

export type PeopleUseCases = ReturnType<typeof bindPeopleUseCases>
