// The page frame: masthead (namespace picker, who I am, my groups, when my session ends,
// sign-out), navigation of the current namespace, and the routed page.
import { useState, type ReactNode } from 'react';
import { Link, useLocation, useNavigate, useParams } from 'react-router';
import {
  Dropdown,
  DropdownItem,
  DropdownList,
  Masthead,
  MastheadBrand,
  MastheadContent,
  MastheadMain,
  MastheadToggle,
  MenuToggle,
  Nav,
  NavItem,
  NavList,
  Page,
  PageSidebar,
  PageSidebarBody,
  PageToggleButton,
  SkipToContent,
  Title,
  Toolbar,
  ToolbarContent,
  ToolbarGroup,
  ToolbarItem,
} from '@patternfly/react-core';
import BarsIcon from '@patternfly/react-icons/dist/esm/icons/bars-icon';
import UserIcon from '@patternfly/react-icons/dist/esm/icons/user-icon';
import { useSession } from './session';
import { useNamespaces } from './namespaces';
import { formatTimestamp } from './format';
import { fmt, t } from './strings';


const sections: { path: string; label: string }[] = [
  { path: '', label: t.nav.overview },
  { path: 'backups', label: t.nav.backups },
  { path: 'restores', label: t.nav.restores },
  { path: 'storage-locations', label: t.nav.storageLocations },
  { path: 'schedules', label: t.nav.schedules },
  { path: 'history', label: t.nav.history },
  { path: 'queue', label: t.nav.queue },
];

function NamespaceSwitcher({ current }: { current?: string }) {
  const [open, setOpen] = useState(false);
  const navigate = useNavigate();
  const location = useLocation();
  const { data } = useNamespaces();
  const switchTo = (name: string) => {
    setOpen(false);
    // Keep the section (backups, history…) when switching namespace, not the object.
    const section = current ? location.pathname.split('/')[3] ?? '' : '';
    void navigate(`/ns/${encodeURIComponent(name)}${section ? `/${section}` : ''}`);
  };
  return (
    <Dropdown
      isOpen={open}
      onOpenChange={setOpen}
      toggle={(ref) => (
        <MenuToggle ref={ref} onClick={() => setOpen(!open)} isExpanded={open} aria-label={t.header.namespace} data-testid="namespace-switcher">
          {/* Namespaces may have 63 characters: cut in the masthead, whole in the list. */}
          <span className="nac-masthead-namespace" title={current}>
            {current ?? t.header.chooseNamespace}
          </span>
        </MenuToggle>
      )}
    >
      <DropdownList>
        {(data ?? []).map((ns) => (
          <DropdownItem key={ns.name} onClick={() => switchTo(ns.name)}>
            {ns.name}
          </DropdownItem>
        ))}
      </DropdownList>
    </Dropdown>
  );
}

function UserMenu() {
  const { session, signOut } = useSession();
  const [open, setOpen] = useState(false);
  if (!session) return null;
  return (
    <Dropdown
      isOpen={open}
      onOpenChange={setOpen}
      popperProps={{ position: 'right' }}
      toggle={(ref) => (
        <MenuToggle ref={ref} onClick={() => setOpen(!open)} isExpanded={open} variant="plainText" aria-label={t.header.userMenu} data-testid="user-menu">
          {/* OpenShift and service-account names can be long (system:serviceaccount:NS:NAME):
              cut in the masthead, an icon alone at phone width, whole in the menu and the
              tooltip. */}
          <UserIcon className="nac-user-icon" aria-hidden="true" />
          <span className="nac-username" title={session.username}>
            {session.username}
          </span>
        </MenuToggle>
      )}
    >
      <DropdownList>
        <DropdownItem isDisabled key="who" data-testid="whoami">
          {fmt(t.header.signedInAs, { user: session.username })}
        </DropdownItem>
        <DropdownItem isDisabled key="groups" data-testid="groups">
          {session.groups.length ? fmt(t.header.groups, { groups: session.groups.join(', ') }) : t.header.noGroups}
        </DropdownItem>
        <DropdownItem isDisabled key="ends" data-testid="session-ends">
          {fmt(t.header.sessionEnds, { when: formatTimestamp(session.expiresAt) })}
        </DropdownItem>
        <DropdownItem key="signout" onClick={() => void signOut()} data-testid="sign-out">
          {t.header.signOut}
        </DropdownItem>
      </DropdownList>
    </Dropdown>
  );
}

export function Layout({ children }: { children: ReactNode }) {
  const { namespace } = useParams();
  const location = useLocation();
  const masthead = (
    <Masthead>
      <MastheadMain>
        <MastheadToggle>
          <PageToggleButton variant="plain" aria-label="Navigation">
            <BarsIcon />
          </PageToggleButton>
        </MastheadToggle>
        <MastheadBrand>
          <Link to="/" style={{ color: "inherit", textDecoration: "none" }} aria-label={t.app.title}>
            <Title headingLevel="h2" size="lg" style={{ whiteSpace: 'nowrap', marginInlineEnd: '1rem' }}>
              {t.app.product}
            </Title>
          </Link>
        </MastheadBrand>
      </MastheadMain>
      <MastheadContent>
        <Toolbar isFullHeight isStatic>
          <ToolbarContent>
            <ToolbarGroup>
              <ToolbarItem>
                <NamespaceSwitcher current={namespace} />
              </ToolbarItem>
            </ToolbarGroup>
            <ToolbarGroup align={{ default: 'alignEnd' }}>
              <ToolbarItem>
                <UserMenu />
              </ToolbarItem>
            </ToolbarGroup>
          </ToolbarContent>
        </Toolbar>
      </MastheadContent>
    </Masthead>
  );
  const base = namespace ? `/ns/${encodeURIComponent(namespace)}` : '';
  const sidebar = (
    <PageSidebar>
      <PageSidebarBody>
        <Nav aria-label={t.nav.namespaces}>
          <NavList>
            <NavItem isActive={location.pathname === '/'}>
              <Link to="/">{t.nav.namespaces}</Link>
            </NavItem>
            {namespace &&
              sections.map((section) => {
                const to = section.path ? `${base}/${section.path}` : base;
                const active = section.path ? location.pathname.startsWith(to) : location.pathname === base;
                return (
                  <NavItem key={section.path} isActive={active}>
                    <Link to={to} aria-current={active ? 'page' : undefined}>
                      {section.label}
                    </Link>
                  </NavItem>
                );
              })}
          </NavList>
        </Nav>
      </PageSidebarBody>
    </PageSidebar>
  );
  return (
    <Page
      masthead={masthead}
      sidebar={sidebar}
      isManagedSidebar
      skipToContent={<SkipToContent href="#main">{t.app.skipToContent}</SkipToContent>}
      mainContainerId="main"
    >
      {children}
    </Page>
  );
}
