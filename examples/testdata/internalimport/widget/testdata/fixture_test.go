package fixture
