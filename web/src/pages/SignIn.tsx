// Sign-in: paste a cluster token (with the `oc whoami -t` hint), or OpenShift OAuth when the
// gateway is configured for it.
import { useEffect, useState, type FormEvent } from 'react';
import { ActionGroup, Alert, Button, Divider, Form, FormGroup, FormHelperText, HelperText, HelperTextItem, LoginPage, TextInput } from '@patternfly/react-core';
import { session as sessionApi } from '../api/client';
import { useSession } from '../session';
import { describeError } from '../components/ErrorAlert';
import { t } from '../strings';

export default function SignIn() {
  const { signIn } = useSession();
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [oauth, setOauth] = useState(false);
  useEffect(() => {
    sessionApi
      .config()
      .then((config) => setOauth(!!config.oauth))
      .catch(() => setOauth(false));
  }, []);
  const submit = async (event: FormEvent) => {
    event.preventDefault();
    const value = token.trim();
    if (!value) {
      setError(t.signIn.empty);
      return;
    }
    setBusy(true);
    setError(null);
    try {
      await signIn(value);
    } catch (err) {
      const described = describeError(err);
      setError(described.title === t.errors.unauthenticated ? t.signIn.refused : `${described.title} ${described.detail}`.trim());
    } finally {
      setBusy(false);
    }
  };
  return (
    <LoginPage loginTitle={t.signIn.title} loginSubtitle={t.signIn.intro} brandImgSrc={undefined}>
      <Form onSubmit={(event) => void submit(event)} aria-label={t.signIn.title}>
        {error && <Alert variant="danger" isInline title={error} data-testid="signin-error" />}
        <FormGroup label={t.signIn.tokenLabel} fieldId="token" isRequired>
          <TextInput
            id="token"
            name="token"
            type="password"
            autoComplete="off"
            value={token}
            onChange={(_event, value) => setToken(value)}
            validated={error ? 'error' : 'default'}
            autoFocus
          />
          <FormHelperText>
            <HelperText>
              <HelperTextItem>{t.signIn.tokenHelp}</HelperTextItem>
            </HelperText>
          </FormHelperText>
        </FormGroup>
        <ActionGroup>
          <Button type="submit" variant="primary" isBlock isLoading={busy} isDisabled={busy}>
            {t.signIn.submit}
          </Button>
        </ActionGroup>
        {oauth && (
          <>
            <Divider />
            <Button component="a" href="/api/v1/session/oauth/start" variant="secondary" isBlock>
              {t.signIn.oauth}
            </Button>
          </>
        )}
      </Form>
    </LoginPage>
  );
}
